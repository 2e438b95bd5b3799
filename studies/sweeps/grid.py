"""The declared cells of WebShop and SciWorld, and the rule that picks their test cells.

Committed before any test cell runs. Per benchmark a base configuration (fixed budget, tasks,
seeds) and a grid: planner-mix skills q, particles N, AMC's value (the rollout upper bound, no
value, and the learned V_theta of stage ``value_webshop`` / ``value_sciworld`` at the skills
of ``value_q``), and the KL coefficients beta tried on **validation** cells (48 train tasks: the
id tail for the first WebShop cells, records without ``val_sample``; a seeded random sample,
``val_sample: random``, for every later one, the learned cells included). The rollout value's
cost does not depend on beta's role in the weights, but its estimate
f = beta log mean exp(R / beta) does, so beta is chosen per value.

**Choice rule** (:func:`choose`): for each (q, N, value) the beta whose validation cell has the
largest mean AMC - Best-of-N on the oracle best-of-pool score (ties: the larger beta, the
milder tilt) is the one run on test; the ``none`` value is run at one beta (without a value
the weights before the end carry no reward on WebShop, so beta cannot act before the last
step). The regime a benchmark's summary reports (:func:`best_regime`) is, per value, the
(q, N, beta) with the largest validation difference among the chosen ones; its test cell is
the reported one. Every other test cell is shown too.

    python -m studies.sweeps.grid validation webshop     # one line of -S overrides per cell
    python -m studies.sweeps.grid test webshop --runs evidence   # the chosen test cells
    python -m studies.sweeps.grid ceiling sciworld   # the declared rollout-ceiling cells

**Ceilings** (:data:`CEILINGS`): rollout-value test cells declared with a fixed beta, for a
benchmark whose rollout value is too costly for a validation choice (SciWorld); the summary
reads them as the ceiling at their q and N (:func:`ceiling_record`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studies.sweeps.cell import cell_name
from studies.sweeps.config import CellParams
from studies.sweeps.harvest import read_record
from studies.sweeps.select import compare


@dataclass(frozen=True)
class BenchGrid:
    """One benchmark's declared sweep."""

    base: dict[str, Any]
    """Cell keys every cell of the benchmark shares (benchmark, budget, tasks, rollouts)."""
    q: tuple[float, ...]
    """Planner-mix skills."""
    n: tuple[int, ...]
    """Particles (both methods)."""
    beta: tuple[float, ...]
    """KL coefficients tried on validation (AMC with a value)."""
    values: tuple[str, ...] = ("rollout", "none")
    """AMC's values (learned: a value stage of the benchmark, e.g. ``value_webshop``)."""
    value_q: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """Skills of a value's cells where they are fewer than ``q`` (e.g. the learned value's)."""
    value_keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Cell keys of a value's cells only (the learned value's model directory)."""
    none_beta: float = 0.1
    """The one beta of the ``none`` cells."""
    seeds: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Seeds per split."""
    extra: tuple[tuple[str, float, int, tuple[float, ...]], ...] = ()
    """Settings declared later, beyond the product above: (value, q, N, betas). A setting of
    the product listed here takes these betas (validation cells the product lacks are added)."""

    def settings(self, value: str) -> list[tuple[float, int, tuple[float, ...]]]:
        """(q, N, betas) of every declared setting of ``value``, in run order."""
        betas = (self.none_beta,) if value == "none" else self.beta
        out = {(q, n): betas for n in self.n for q in self.value_q.get(value, self.q)}
        out.update({(q, n): b for v, q, n, b in self.extra if v == value})
        return [(q, n, b) for (q, n), b in out.items()]


GRIDS: dict[str, BenchGrid] = {
    "webshop": BenchGrid(
        base={"benchmark": "webshop", "budget": 6, "val_tasks": 48, "rollouts": 8,
              "every": 2, "schedule": "every"},
        q=(0.3, 0.4, 0.6), n=(4, 8), beta=(0.05, 0.1, 0.25, 0.5),
        values=("rollout", "none", "learned"), value_q={"learned": (0.3,)},
        value_keys={"learned": {"value_model": "models/value-webshop", "val_sample": "random"},
                    # declared and run before the rollout value stepped the forced buy at the
                    # end of a rollout (cell.rollout_final): the cells as they ran
                    "rollout": {"rollout_final": False}},
        seeds={"validation": (0, 1, 2, 3), "test": (0, 1, 2, 3, 4, 5)}),
    "sciworld": BenchGrid(
        base={"benchmark": "sciworld", "budget": 10, "val_tasks": 6, "rollouts": 4,
              "every": 2, "schedule": "every", "task_file": "sciworld_tasks.json"},
        q=(0.3, 0.6, 0.8), n=(4,), beta=(0.1,), values=("none", "learned"),
        value_q={"learned": (0.3, 0.6)},
        value_keys={"learned": {"value_model": "models/value-sciworld"}},
        seeds={"validation": (0,), "test": (0, 1)},
        extra=(("learned", 0.3, 4, (0.05, 0.1, 0.25)), ("learned", 0.3, 8, (0.05, 0.1, 0.25)),
               ("none", 0.3, 4, (0.05, 0.1, 0.25)), ("none", 0.3, 8, (0.05, 0.1, 0.25)))),
}
"""The declared cells. WebShop: the fixture catalog (test = goals 5..54, validation = 48 of
the 148 train goals: the id tail in the first cells, a seeded random sample in the later ones
and in every learned cell), budget 6 (the oracle plan takes 4-6 steps: search, open, 0-2
options, buy); the learned value (declared after the rollout and none cells ran, before any
learned cell) at the skill both chose, q = 0.3, at both N and every beta. SciWorld: validation
cells of value ``none``; the rollout ceiling is the test cells of :data:`CEILINGS` (its
forks are verified JVM replays, seconds each); the learned value of stage ``value_sciworld``
(declared 2026-12-03, after the none and ceiling cells ran, before any learned cell or the
stage ran) at q = 0.6 -- the skill SciWorld's none regime chose on validation -- N = 4 and
the grid's one beta, 0.1: a validation cell, then its test twin. Extended (declared 2026-12-03
15:50 UTC, after that value's validation cell ran -- Best-of-4's best-of-pool 0.95 at q = 0.6
on test leaves a ceiling gain of +0.036 -- and before any q = 0.3 cell ran): skill q = 0.3,
where Best-of-N leaves room, for every value (none on validation, then the chosen test twin;
the rollout ceiling as a declared ceiling cell), and the learned value retrained on q 0.3 and
0.6 rollouts (one value for both skills, as TextCraft's); the q 0.6-only value's cells are
kept and shown as superseded. Extended again (declared 2026-12-04, after the q = 0.3, N = 4,
beta = 0.1 cells of every value ran on validation and test, before any cell below): at q = 0.3
the learned value's beta is chosen on validation among 0.05, 0.1 and 0.25 at N = 4 and 8, and
the none value runs at N = 8 too (its one beta); q 0.6 and 0.8 stay at N = 4 (Best-of-4's
best-of-pool is 0.95 and 1.0 there on test: no room for either method). And (declared
2026-12-04 09:50 UTC, after those cells ran, before any of these): the none value's beta is
chosen on validation too at q = 0.3 (0.05, 0.1, 0.25 at N = 4 and 8), since SciWorld pays
score increments before the end, so beta acts without a value (on WebShop it cannot)."""


def cell(grid: BenchGrid, split: str, **kw: Any) -> dict[str, Any]:
    """One cell's overrides of sweeps/params.yaml (with its value's own keys)."""
    return {**grid.base, "split": split, "seeds": list(grid.seeds[split]), **kw,
            **grid.value_keys.get(str(kw.get("value")), {})}


CEILINGS: dict[str, tuple[dict[str, Any], ...]] = {
    "sciworld": tuple(cell(GRIDS["sciworld"], "test", q=q, n=n, beta=0.1, value="rollout")
                      for q, n in (*((q, 4) for q in GRIDS["sciworld"].q), (0.3, 8))),
    "webshop": tuple({**cell(GRIDS["webshop"], "test", q=0.3, n=n, beta=b, value="rollout"),
                      "rollout_final": True} for n, b in ((4, 0.1), (8, 0.05))),
}
"""Rollout-ceiling cells run on test without a validation choice of beta (declared before
they ran). SciWorld: the test twins of the value-``none`` cells (every q, N = 4, the base's
M = 4 rollouts, both test seeds, all 14 test games: not reduced, since the measured cost
allows the whole test split) at beta = 0.1 -- the grid's one SciWorld
beta, the none cells' beta (so the ceiling and the no-value cell differ in the value only) and
within WebShop's validated range. A validation run would cost as much as the test cell and
choose among one beta. Sized from the measured cost of rollout-value pairs
(``evidence/sciworld_rollout_cost.json``, :func:`studies.sweeps.benchdoc.cell_seconds`): both cells
together fit in 90 minutes on one core at the measured figures (tests/studies/sweeps/test_grid.py).
SciWorld at q = 0.3, N = 8 (declared 2026-12-04 with the grid's N = 8 settings, before it ran;
q 0.3's N = 4 ceiling took 1420 s): the same cell at twice the particles.
WebShop (declared 2026-12-03, before either ran): the learned value's ceiling with the forced
buy (``rollout_final: true``, cells named ``-ff``), at the learned cells' skill q = 0.3, both N,
each at the beta the rule chose for the rollout value at that (q, N) on validation (N = 4: 0.1,
N = 8: 0.05; those validation cells ran without the buy); the summary reads it as the learned
row's ceiling once it has run, in place of the rollout twin without the buy."""


def candidates(bench: str) -> list[dict[str, Any]]:
    """Every validation cell of a benchmark, in run order (rollout first, cheap N first)."""
    g = GRIDS[bench]
    out = []
    for value in g.values:
        for q, n, betas in g.settings(value):
            out += [cell(g, "validation", q=q, n=n, beta=b, value=value) for b in betas]
    return out


def _key(c: dict[str, Any]) -> tuple[Any, ...]:
    return (c["q"], c["n"], c["value"])


def _diff(rec: dict[str, Any]) -> float:
    p = compare(rec)
    return p.d.mean if p is not None else float("-inf")


def of_bench(runs: Sequence[dict[str, Any]], bench: str, split: str) -> list[dict[str, Any]]:
    """The benchmark's records of a split whose cell matches its declared base."""
    base = GRIDS[bench].base
    return [r for r in runs if r["cell"].get("benchmark", "textcraft") == bench
            and r["cell"]["split"] == split and all(r["cell"].get(k) == v
                                                    for k, v in base.items())]


def declared_betas(bench: str, value: str, q: float, n: int) -> tuple[float, ...]:
    """The betas declared at (q, N) of ``value`` (() where the setting is not declared)."""
    return next((b for q_, n_, b in GRIDS[bench].settings(value) if (q_, n_) == (q, n)), ())


def complete(runs: Sequence[dict[str, Any]], bench: str) -> list[dict[str, Any]]:
    """Validation records of the declared (q, N, value) settings whose every declared beta
    has run, at a declared beta (a choice among some of the candidates is not the rule)."""
    recs = of_bench(runs, bench, "validation")
    seen: dict[tuple[Any, ...], set[float]] = {}
    for r in recs:
        seen.setdefault(_key(r["cell"]), set()).add(r["cell"]["beta"])

    def betas(c: dict[str, Any]) -> tuple[float, ...]:
        return declared_betas(bench, c["value"], c["q"], c["n"])

    # an undeclared setting has no betas, so its records fail the first test too
    return [r for r in recs if r["cell"]["beta"] in betas(r["cell"])
            and set(betas(r["cell"])) <= seen[_key(r["cell"])]]


def choose(runs: Sequence[dict[str, Any]], bench: str) -> list[dict[str, Any]]:
    """Per (q, N, value) with every declared beta run on validation: the record with the
    largest AMC - BoN (ties: larger beta)."""
    best: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in complete(runs, bench):
        k, c = _key(r["cell"]), r["cell"]
        old = best.get(k)
        if old is None or (_diff(r), c["beta"]) > (_diff(old), old["cell"]["beta"]):
            best[k] = r
    return [best[k] for k in sorted(best)]


def chosen_test_cells(runs: Sequence[dict[str, Any]], bench: str) -> list[dict[str, Any]]:
    """The test twins of the chosen validation cells."""
    g = GRIDS[bench]
    return [cell(g, "test", q=r["cell"]["q"], n=r["cell"]["n"], beta=r["cell"]["beta"],
                 value=r["cell"]["value"]) for r in choose(runs, bench)]


def ceiling_record(runs: Sequence[dict[str, Any]], bench: str, q: float, n: int
                   ) -> dict[str, Any] | None:
    """The record of a declared ceiling cell at (q, N) (None: not declared or not run)."""
    want = [c for c in CEILINGS.get(bench, ()) if (c["q"], c["n"]) == (q, n)]
    return next((r for r in of_bench(runs, bench, "test") for c in want
                 if all(r["cell"].get(k) == v for k, v in c.items())), None)


def best_regime(runs: Sequence[dict[str, Any]], bench: str, value: str
                ) -> dict[str, Any] | None:
    """The chosen validation record of ``value`` with the largest difference (None: none)."""
    recs = [r for r in choose(runs, bench) if r["cell"]["value"] == value]
    return max(recs, key=lambda r: (_diff(r), r["cell"]["beta"]), default=None)


def is_current(rec: dict[str, Any], current: str | None) -> bool:
    """False for a learned cell's record that ran with another model than ``current`` (the
    value stage's model hash; a harvested record's id may carry a calibration suffix)."""
    if (rec.get("cell") or {}).get("value") != "learned" or not current:
        return True
    return str(rec.get("value_model_hash", "")).split("-")[0] == current


def current_hash(quality: Path) -> str | None:
    return str(json.loads(quality.read_text())["model_hash"]) if quality.is_file() else None


def done_names(runs: Path, quality: Path) -> set[str]:
    """Cell names with a record under ``runs``; a learned cell counts only when its record
    ran with the value stage's current model (``quality``'s ``model_hash``, when present),
    so a retrained value's cells are listed again (their earlier records stay, superseded)."""
    current = current_hash(quality)
    return {p.stem.split("--")[0] for p in runs.glob("*.json")
            if is_current(json.loads(p.read_text() or "{}"), current)}


def overrides(c: dict[str, Any]) -> str:
    """``-S cell.k=v ...`` for ``dvc exp run`` (lists as JSON)."""
    return " ".join(f"-S 'cell.{k}={json.dumps(v) if isinstance(v, list) else v}'"
                    for k, v in c.items())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("split", choices=("validation", "test", "ceiling"),
                    help="ceiling: the declared rollout-ceiling test cells (CEILINGS)")
    ap.add_argument("bench", choices=sorted(GRIDS))
    ap.add_argument("--runs", type=Path, default=Path("evidence"),
                    help="evidence folder with the validation records (test cells)")
    ap.add_argument("--skip-done", action="store_true",
                    help="leave out cells whose record is already under RUNS/runs")
    args = ap.parse_args(argv)
    if args.split == "validation":
        cells = candidates(args.bench)
    elif args.split == "ceiling":
        cells = list(CEILINGS.get(args.bench, ()))
    else:
        files = sorted((args.runs / "runs").glob("*.json"))
        current = current_hash(Path(f"out/value_quality_{args.bench}.json"))
        # the choice reads the current value's learned records only (a retrained value's
        # validation cells choose its test cells, not the superseded value's)
        runs = [r for r in (read_record(p) for p in files) if is_current(r, current)]
        cells = chosen_test_cells(runs, args.bench)
        if not cells:
            print(f"error: no {args.bench} validation records under {args.runs}/runs",
                  file=sys.stderr)
            return 2
    done = done_names(args.runs / "runs", Path(f"out/value_quality_{args.bench}.json"))
    for c in cells:
        if not (args.skip_done and cell_name(CellParams.model_validate(c)) in done):
            print(overrides(c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
