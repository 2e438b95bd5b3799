"""Which prior change hurts a stale value head? A change of *which subtask* the prior is good at.

``studies/drift/candidates.py`` found that no change of the planner-mix prior's skill level or
action style hurts a stale head at the drift demo's toy scale: every success was saturated, and
a skill change keeps *which* states are good (more of the plan done is better under any q), so
a stale head still ranks them right. Here the prior's skill depends on the subtask
(``prior.options.skills``, :func:`amc.priors.planner_mix.skill`): model version A fetches base
items reliably and crafts poorly, version B the reverse. Under A the scarce progress is a
crafted intermediate, under B a fetched item: the states a stale head (trained on A's
rollouts) weighs up are not the ones that are good under B.

Declared before running (the regime was sized by a Best-of-N-only probe, no head, so that
Best-of-N's success is well below 1; nothing below was tuned on a head's result):

- regime (:func:`studies.drift.demo.demo_params`, ``scale="measure"``): TextCraft depth 2-3,
  ``smc.max_steps`` 6, resampling after steps 2 and 4, a 1-layer MiniLM head, rounds of
  window 1 (round 0 on A trains the stale head, a round on B the retrained head); regimes
  (``smc.beta``), in this order: 1.0 (declared and run first), then 0.05 (declared after the
  first candidate at beta 1 found no gain to lose, g0 = +0.000 [-0.066, +0.066]: the project's
  gain-vs-beta sweep, docs/evidence.md, has no gain at beta 1 even for the rollout upper
  bound, and its largest at 0.05);
- candidates, in this order: (A, B) = ({get 0.9, craft 0.3}, {get 0.3, craft 0.9}), then the
  reverse;
- evaluation at N = 4 on ``TASKS`` test tasks x ``SEEDS`` (seeds no round or evaluation
  uses), paired by (task, seed), averaged within task, t interval over tasks (95%) and exact
  sign-flip p (:func:`amc.stats.paired_difference`): ``g0`` = stale gain (AMC - Best-of-N) on
  A, ``g1`` = stale gain on B, ``g2`` = retrained gain on B; ``fall`` = g1 - g0,
  ``recovery`` = g2 - g1 (= success of smc+retrained - smc+stale on B);
- rule: the chosen change is the first (regime, candidate), regimes outer, whose ``fall``
  interval lies below 0 and whose ``recovery`` interval lies above 0 (later ones are not run);
  none when none has both.

``python -m studies.drift.subtask [--done RESULTS.txt [--only-done]] [out.json]`` (default
``evidence/drift/candidates-subtask.json``); each candidate in its own process and temp dir
(its own MLflow store); every RNG is seeded. A candidate takes ~35 min on one shared core.
With ``AMC_DRIFT_WORKDIR=DIR`` each candidate runs in ``DIR/<its key's hash>`` instead and a
rerun resumes there (a candidate whose 6-layer heads train for an hour outlives a sitting):
heads already trained are reused (:func:`head`) and the evaluations skip finished tasks (the
runner's resume); every RNG is seeded, so the row is the one an uninterrupted run writes, but
for the models' version numbers when a round's training was itself cut short.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from amc.stats import paired_difference
from studies.drift.candidates import successes, train_round
from studies.drift.demo import SKILLS_A, SKILLS_B, demo_params, merged

Options = dict[str, Any]
CANDIDATES: tuple[tuple[Options, Options], ...] = (
    ({"q": 0.5, "skills": SKILLS_A}, {"q": 0.5, "skills": SKILLS_B}),
    ({"q": 0.5, "skills": SKILLS_B}, {"q": 0.5, "skills": SKILLS_A}),
)
"""(prior A options, prior B options), in the declared order."""
Regime = tuple[float, Options]
"""A regime: ``smc.beta`` and overrides of the demo's params ({}: none; section -> values,
merged into the section, e.g. ``{"env": {"options": {"reward": "binary"}}}``)."""
TASKS = 48
SEEDS = (500, 501, 502)
N = 4
BETAS = (1.0, 0.05)
"""``smc.beta`` of each regime, in the declared order (the rest is the demo's params)."""
NOTES = ("(beta 1.0, first candidate) ran at git 49815a8, where a skills key matched as a "
         "substring: 'get' also matched the craft actions of items whose name contains it "
         "(e.g. 'craft 9 iron nugget using 1 iron ingot'); keys match whole words since "
         "babb7c4.")
"""What differs between the code that ran a row and this one."""


def gain(t: dict[str, dict[tuple[str, int], float]], head: str) -> dict[tuple[str, int], float]:
    """AMC - Best-of-N per (task, seed)."""
    smc, bon = t[f"smc@{N}+{head}"], t[f"bon@{N}"]
    return {k: smc[k] - bon[k] for k in smc if k in bon}


def candidate(beta: float, qa: Options, qb: Options, root: Path,
              over: Options | None = None) -> dict[str, Any]:
    """Train stale (A) and retrained (B) heads, evaluate, the paired fall and recovery
    (``over``: the regime's overrides of the demo's params)."""
    os.chdir(root)
    params_path = root / "params.yaml"
    data = demo_params(scale="measure")
    data["smc"]["beta"] = beta
    data = merged(data, over or {})
    params_path.write_text(yaml.safe_dump(data, sort_keys=False))
    stale = head(root, "stale", lambda: train_round(params_path, qa))
    fresh = head(root, "fresh", lambda: train_round(params_path, qb))
    kw = {"tasks": TASKS, "seeds": SEEDS, "n": N}
    on_a = successes(params_path, qa, {"stale": stale}, root / "eval-a", **kw)
    on_b = successes(params_path, qb, {"stale": stale, "fresh": fresh}, root / "eval-b", **kw)
    g0, g1, g2 = gain(on_a, "stale"), gain(on_b, "stale"), gain(on_b, "fresh")
    fall, rec = paired_difference(g1, g0), paired_difference(g2, g1)
    zero = {k: 0.0 for k in g0}
    gains = {name: paired_difference(g, zero).to_dict()
             for name, g in (("g0", g0), ("g1", g1), ("g2", g2))}
    rates = {f"{side}:{spec}": sum(v.values()) / len(v)
             for side, t in (("A", on_a), ("B", on_b)) for spec, v in t.items()}
    return {"beta": beta, **({"overrides": over} if over else {}), "prior_a": qa,
            "prior_b": qb, "gains": gains, "success": rates,
            "fall": fall.to_dict(), "recovery": rec.to_dict(),
            "hurts": bool(fall.hi < 0 and rec.lo > 0), "models": [stale, fresh]}


def head(root: Path, name: str, train: Callable[[], str]) -> str:
    """The head ``name``'s model URI: recorded in ``root/heads.json`` once trained, so a rerun
    in the same ``root`` reuses it instead of training again (its rounds live in ``root``'s
    MLflow store and ledger)."""
    path = root / "heads.json"
    heads = json.loads(path.read_text()) if path.exists() else {}
    if name not in heads:
        heads[name] = train()
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(heads))
        tmp.replace(path)  # atomic: a kill leaves the old record or the new one
    return str(heads[name])


def one(beta: float, qa: Options, qb: Options, over: Options | None = None) -> dict[str, Any]:
    """One (regime, candidate) in a fresh temp dir (its own MLflow store), or in its folder
    under ``AMC_DRIFT_WORKDIR`` (resumed); ``seconds``: this process's."""
    started = time.monotonic()
    if work := os.environ.get("AMC_DRIFT_WORKDIR"):
        root = Path(work) / hashlib.sha256(key(beta, qa, qb, over).encode()).hexdigest()[:12]
        root.mkdir(parents=True, exist_ok=True)
        row = candidate(beta, qa, qb, root.resolve(), over)
    else:
        with tempfile.TemporaryDirectory(prefix="drift-subtask-") as tmp:
            row = candidate(beta, qa, qb, Path(tmp), over)
    return {**row, "seconds": round(time.monotonic() - started, 1)}


def key(beta: float, qa: Options, qb: Options, over: Options | None = None) -> str:
    """A (regime, candidate)'s key in ``done`` (a regime without overrides: its beta alone)."""
    return json.dumps([beta, qa, qb, *([over] if over else [])], sort_keys=True)


def run_one(beta: float, qa: Options, qb: Options, done: dict[str, str],
            over: Options | None = None) -> dict[str, Any]:
    """One (regime, candidate)'s row: from ``done`` (its ``--one`` output line, keyed by its
    JSON) when given, else run in a subprocess."""
    k = key(beta, qa, qb, over)
    if k not in done:
        extra = [json.dumps(over)] if over else []
        proc = subprocess.run([sys.executable, __file__, "--one", str(beta), json.dumps(qa),
                               json.dumps(qb), *extra], capture_output=True, text=True,
                              check=False)
        lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if proc.returncode or not lines:
            raise RuntimeError(f"candidate {(qa, qb)} failed:\n{proc.stderr[-3000:]}")
        done[k] = lines[-1]
    return dict(json.loads(done[k][len("RESULT "):]))


def search(candidates: tuple[tuple[Options, Options], ...], regimes: tuple[Regime, ...],
           done: dict[str, str], only_done: bool) -> list[dict[str, Any]]:
    """The (regime, candidate) rows in the declared order, regimes outer, stopping after the
    first that the rule chooses (``only_done``: what ran; the rest is marked not run)."""
    rows: list[dict[str, Any]] = []
    for beta, over in regimes:
        for qa, qb in candidates:
            if rows and rows[-1]["hurts"]:
                break
            if only_done and key(beta, qa, qb, over) not in done:
                rows.append({"beta": beta, **({"overrides": over} if over else {}),
                             "prior_a": qa, "prior_b": qb, "not_run": True, "hurts": False})
                continue
            rows.append(run_one(beta, qa, qb, done, over))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def change(row: dict[str, Any]) -> dict[str, Any]:
    """A row's (regime, candidate): what the rule chooses."""
    return {k: row[k] for k in ("beta", "overrides", "prior_a", "prior_b") if k in row}


def run_set(argv: list[str], candidates: tuple[tuple[Options, Options], ...],
            regimes: tuple[Regime, ...], default_out: str, extra: dict[str, Any]) -> None:
    """One declared candidate set: ``[--done FILE] [--only-done] [out.json]`` (``--done``
    reuses ``RESULT`` lines; a line without ``beta`` ran at the first regime's); writes the
    declaration, ``extra`` (notes, probes), the rows and the chosen change."""
    done: dict[str, str] = {}
    if argv[:1] == ["--done"]:
        for line in Path(argv[1]).read_text().splitlines():
            if line.startswith("RESULT "):
                r = {"beta": regimes[0][0], **json.loads(line[len("RESULT "):])}
                done[key(r["beta"], r["prior_a"], r["prior_b"], r.get("overrides"))] = (
                    "RESULT " + json.dumps(r))
        argv = argv[2:]
    only_done = argv[:1] == ["--only-done"]
    argv = argv[1:] if only_done else argv
    out = Path(argv[0] if argv else default_out).resolve()
    rows = search(candidates, regimes, done, only_done)
    # rows that ran but come after the rule's stop: kept and shown, never chosen
    seen = {key(r["beta"], r["prior_a"], r["prior_b"], r.get("overrides")) for r in rows}
    later = [json.loads(v[len("RESULT "):]) for k, v in done.items() if k not in seen]
    first = next((i for i, r in enumerate(rows) if r["hurts"]), None)
    # a row that meets the rule after one not yet run is chosen only if that one does not
    pending = first is not None and any(r.get("not_run") for r in rows[:first])
    chosen = None if first is None or pending else rows[first]
    overs = [o for _, o in regimes]
    doc = {"declared": {"params": demo_params(scale="measure"),
                        "betas": [b for b, _ in regimes],
                        **({"overrides": overs} if any(overs) else {}),
                        "candidates": candidates, "tasks": TASKS, "seeds": SEEDS, "n": N,
                        "rule": "first (beta, candidate) with fall.hi < 0 and recovery.lo > 0"},
           **extra, "candidates": rows, **({"after_stop": later} if later else {}),
           "chosen": None if chosen is None else change(chosen),
           **({"pending": change(rows[first])} if pending and first is not None else {})}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"chosen: {doc['chosen']}")


def main(argv: list[str]) -> None:
    """The candidates in order, each in its own process (MLflow caches its store per process),
    stopping at the first that the rule chooses (the rule needs no later one); ``--one BETA
    A_JSON B_JSON`` runs one and prints its ``RESULT`` line."""
    if argv[:1] == ["--one"]:
        over = json.loads(argv[4]) if len(argv) > 4 else None
        print("RESULT " + json.dumps(one(float(argv[1]), json.loads(argv[2]),
                                         json.loads(argv[3]), over)))
        return
    run_set(argv, CANDIDATES, tuple((b, {}) for b in BETAS),
            "evidence/drift/candidates-subtask.json", {"notes": NOTES})


if __name__ == "__main__":
    main(sys.argv[1:])
