"""The regime search's analysis: each declared regime's Best-of-N, perfect resampler and room.

Reads the kept Best-of-16 rollouts (``evidence/llm-regime/regime-search/depth{d}/*.jsonl.gz``,
or a run folder's ``*.jsonl``), builds the rollouts of :mod:`amc.value.room` with TextCraft's
observed summary (the inventory and what the goal still needs) as the state key, and applies
``protocol.json``: every candidate regime, per-task rooms paired over tasks (95% t interval and
the exact sign-flip p over all 2^k sign patterns), the prior calls, and the choice rule.
Writes ``room.json`` beside the kept rollouts; ``--check`` recomputes and compares.

    python -m studies.llm_regime.regime_search.analyse [--check]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.planner import plan_length
from amc.envs.textcraft.summary import textcraft_summary
from amc.types import History
from amc.value.data import histories_from_record
from amc.value.room import Rollout, rollouts_from_histories, success_step, summarise_room

HERE = Path(__file__).parent
REPO = HERE.parents[2]
KEPT = REPO / "evidence/llm-regime/regime-search"
M_ROLLOUTS = 4
"""Continuations per particle state of the rollout-value ceiling whose cost is reported."""


def read_records(folder: Path) -> list[dict[str, Any]]:
    """Complete result records of every seed file (``.jsonl.gz`` kept, or ``.jsonl`` live)."""
    records = []
    for f in sorted(folder.glob("bon@*__seed*.jsonl*")):
        opener = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt") as fh:  # type: ignore[operator]
            records += [json.loads(line) for line in fh if line.endswith("\n")]
    return records


def task_histories(records: list[dict[str, Any]]) -> dict[str, list[tuple[int, int, History]]]:
    """(seed, index, history) of every rollout, by task."""
    out: dict[str, list[tuple[int, int, History]]] = {}
    for rec in records:
        for i, h in enumerate(histories_from_record(rec)):
            out.setdefault(str(rec["task_id"]), []).append((int(rec["seed"]), i, h))
    return out


def key(h: History) -> str:
    return textcraft_summary(h) or h.observation


def rollouts(hs: list[tuple[int, int, History]], n: int) -> list[Rollout]:
    return rollouts_from_histories([h for _, _, h in hs], [(s, i // n) for s, i, _ in hs],
                                   key)


def calls(hs: list[tuple[int, int, History]], n: int, horizon: int) -> float:
    """Prior calls of one Best-of-N group within the horizon (mean over groups)."""
    per: dict[tuple[int, int], int] = {}
    for s, i, h in hs:
        per[(s, i // n)] = per.get((s, i // n), 0) + min(h.t, horizon)
    return float(np.mean(list(per.values())))


def regime_row(by_task: dict[str, list[tuple[int, int, History]]], depth: int, horizon: int,
               n: int, step: int, beta: float) -> dict[str, Any]:
    row = summarise_room({t: rollouts(hs, n) for t, hs in by_task.items()}, n=n,
                         horizon=horizon, step=step, beta=beta)
    bon_calls = float(np.mean([calls(hs, n, horizon) for hs in by_task.values()]))
    ratio = (bon_calls + n * M_ROLLOUTS * (horizon - step)) / bon_calls
    return {"depth": depth, **row, "bon_calls": bon_calls, "rollout_ceiling_calls_ratio": ratio}


def prior_at_depth(by_task: dict[str, list[tuple[int, int, History]]], depth: int,
                   horizon: int) -> dict[str, Any]:
    """What the prior reaches at one depth: its rollouts that succeed within the longest
    horizon, and the planner's plan length of each task (how many steps a success needs)."""
    env = TextCraftSuite(TextCraftOptions(min_depth=depth, max_depth=depth,
                                          n_distractors=10)).make()
    lengths = []
    for task in sorted(by_task, key=int):
        env.reset(task)
        assert env.goal is not None
        lengths.append(plan_length(env.book, env.goal))
    hs = [h for v in by_task.values() for _, _, h in v]
    wins = sum(1 for h in hs if (at := success_step(h, 1.0)) is not None and at <= horizon)
    return {"horizon": horizon, "rollouts": len(hs), "successes": wins,
            "plan_lengths": lengths, "plans_within_horizon": sum(x <= horizon for x in lengths)}


def choose(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The protocol's rule: interval above 0 and p < 0.05; the largest room; ties: smaller N,
    shorter H, later step."""
    ok = [r for r in rows if r["room_lo"] > 0 and r["p"] < 0.05]
    return min(ok, key=lambda r: (-round(r["room"], 12), r["n"], r["horizon"], -r["step"]),
               default=None)


def analyse(kept: Path = KEPT) -> dict[str, Any]:
    protocol = json.loads((HERE / "protocol.json").read_text())
    c = protocol["candidates"]
    rows, coverage = [], {}
    for depth in c["depth"]:
        records = read_records(kept / f"depth{depth}")
        declared = protocol["collection"]["tasks"][str(depth)]
        done = {(str(r["task_id"]), int(r["seed"])) for r in records}
        want = {(t, s) for t in declared for s in protocol["collection"]["seeds"]}
        coverage[str(depth)] = {"task_seeds_done": len(done & want), "declared": len(want)}
        if done & want != want:  # an incomplete depth is reported, never analysed
            continue
        by_task = task_histories(records)
        coverage[str(depth)]["prior"] = prior_at_depth(by_task, depth, max(c["horizon"]))
        for h, n, t, b in itertools.product(c["horizon"], c["n"], c["resample_step"], c["beta"]):
            if t < h:
                rows.append(regime_row(by_task, depth, h, n, t, b))
    best = choose(rows)
    met = best is not None and best["room"] >= 0.10
    return {"protocol": "studies/llm_regime/regime_search/protocol.json", "regimes": rows,
            "coverage": coverage, "chosen": best, "goal_met": met}


def fmt(x: float, signed: bool = False) -> str:
    return "nan" if not math.isfinite(x) else (f"{x:+.3f}" if signed else f"{x:.3f}")


def markdown(result: dict[str, Any]) -> str:
    """The search's table (every regime, largest room first), the choice and the goal."""
    rows = sorted(result["regimes"], key=lambda r: -r["room"])
    lines = ["| depth | H | N | resample at | beta | tasks | Best-of-N (observed) "
             "| Best-of-N (chances) | perfect resampler | room [95% t] | exact p "
             "| calls / task | rollout ceiling calls |", "|" + "---|" * 13]
    for r in rows:
        lines.append(
            f"| {r['depth']} | {r['horizon']} | {r['n']} | {r['step']} | {r['beta']:g} "
            f"| {r['tasks']} | {fmt(r['best_of_n'])} | {fmt(r['best_of_n_model'])} "
            f"| {fmt(r['perfect'])} | {fmt(r['room'], True)} [{fmt(r['room_lo'], True)}, "
            f"{fmt(r['room_hi'], True)}] | {r['p']:.4f} | {r['bon_calls']:.1f} "
            f"| {r['rollout_ceiling_calls_ratio']:.1f}x |")
    c = result["chosen"]
    if c is None:
        verdict = "No regime's room has its interval above 0 with exact p < 0.05."
    else:
        verdict = (f"Chosen by the declared rule: depth {c['depth']}, H = {c['horizon']}, "
                   f"N = {c['n']}, resampling after step {c['step']}, beta {c['beta']:g}: room "
                   f"{fmt(c['room'], True)} [{fmt(c['room_lo'], True)}, "
                   f"{fmt(c['room_hi'], True)}], exact p {c['p']:.4f}.")
    goal = ("The goal (room >= +0.10, interval above 0, p < 0.05) is met." if
            result["goal_met"] else "The goal (room >= +0.10, interval above 0, p < 0.05) is "
            "not met by any searched regime.")
    reach = [f"depth {d}: the prior succeeded in {v['prior']['successes']} of "
             f"{v['prior']['rollouts']} rollouts within {v['prior']['horizon']} steps; the "
             f"planner solves {v['prior']['plans_within_horizon']} of "
             f"{len(v['prior']['plan_lengths'])} tasks within them (median plan "
             f"{float(np.median(v['prior']['plan_lengths'])):g} steps)"
             for d, v in result["coverage"].items() if "prior" in v]
    if reach and not result["goal_met"]:
        goal += (" What the prior reaches: " + "; ".join(reach) + ". A resampler can only "
                 "select a success the prior sometimes makes, so room needs a depth where the "
                 "prior's successes are neither rare nor already in most groups: a stronger "
                 "prior (a larger model: a device or an API endpoint) or longer horizons.")
    missing = [f"depth {d}: {v['task_seeds_done']} of {v['declared']} (task, seed) runs kept, "
               "not analysed" for d, v in result["coverage"].items()
               if v["task_seeds_done"] < v["declared"]]
    return "\n".join([*lines, "", verdict + " " + goal, *(["", "Incomplete: " +
                                                            "; ".join(missing) + "."]
                                                          if missing else []), ""])


def publish(result: dict[str, Any], folder: Path, md: str, check: bool) -> int:
    """Write ``room.json`` and ``room.md`` into ``folder``, or (``check``) compare the committed
    ``room.json`` with a recomputation: 0 when equal or written, 1 when it differs."""
    out = folder / "room.json"
    text = json.dumps(result, indent=1, sort_keys=True) + "\n"
    if check:
        if not out.is_file() or out.read_text() != text:
            print(f"error: {out} differs from a recomputation", file=sys.stderr)
            return 1
        print(f"{out}: recomputes exactly")
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    (folder / "room.md").write_text(md)
    print(f"wrote {out}: {len(result['regimes'])} regimes; chosen: {result['chosen']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare room.json")
    args = ap.parse_args(argv)
    result = analyse()
    return publish(result, KEPT, markdown(result), args.check)


if __name__ == "__main__":
    raise SystemExit(main())
