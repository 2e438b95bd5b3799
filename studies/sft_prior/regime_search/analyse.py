"""The fine-tuned prior's search: skill by checkpoint and depth, every regime's room, the choice.

Reads the kept cells (``evidence/sft-prior/regime-search/step-NNNNNN/depthD/*.jsonl.gz``) and
applies ``protocol.json`` with the earlier search's estimator
(:func:`studies.llm_regime.regime_search.analyse.regime_row`). A cell is analysed only when
every declared (task, seed) of it is kept; the rest are listed as incomplete. Writes
``room.json`` and ``room.md`` beside the cells; ``--check`` recomputes and compares.

    python -m studies.sft_prior.regime_search.analyse [--check]
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path
from typing import Any

from studies.llm_regime.regime_search.analyse import (
    fmt,
    prior_at_depth,
    publish,
    read_records,
    regime_row,
    task_histories,
)
from studies.sft_prior.regime_search.run import EVIDENCE, HERE, protocol, step_dir

CEILING_CALLS = 8.0
"""The most prior calls a rollout-value ceiling may cost, in Best-of-N's (the goal's budget)."""


def choose(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The declared rule: interval above 0, p < 0.05, ceiling <= 8x calls; the largest room;
    ties: N = 4 first, shorter H, later step, earlier checkpoint."""
    ok = [r for r in rows if r["room_lo"] > 0 and r["p"] < 0.05
          and r["rollout_ceiling_calls_ratio"] <= CEILING_CALLS]
    return min(ok, key=lambda r: (-round(r["room"], 12), r["n"] != 4, r["horizon"], -r["step"],
                                  r["checkpoint"]), default=None)


def analyse_cell(folder: Path, depth: int, cell_keys: dict[str, Any],
                 row_keys: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One kept cell: how many declared (task, seed) runs it holds and, once complete, the
    prior's skill there and every declared regime's row (``cell_keys``/``row_keys`` name it)."""
    p = protocol()
    c, col = p["candidates"], p["collection"]
    records = read_records(folder) if folder.is_dir() else []
    want = {(t, s) for t in col["tasks"][str(depth)] for s in col["seeds"]}
    done = {(str(r["task_id"]), int(r["seed"])) for r in records} & want
    cell: dict[str, Any] = {**cell_keys, "depth": depth, "done": len(done),
                            "declared": len(want)}
    if done != want:
        return cell, []
    by_task = task_histories(records)
    horizons = c["horizon"][str(depth)]
    cell["prior"] = prior_at_depth(by_task, depth, max(horizons))
    rows = [{**row_keys, **regime_row(by_task, depth, h, n, t, b)}
            for h, n, t, b in itertools.product(horizons, c["n"], c["resample_step"], c["beta"])
            if t < h]
    return cell, rows


def analyse(kept: Path = EVIDENCE) -> dict[str, Any]:
    c = protocol()["candidates"]
    rows, cells = [], []
    for ckpt, depth in itertools.product(c["checkpoint"], c["depth"]):
        cell, got = analyse_cell(kept / step_dir(ckpt) / f"depth{depth}", depth,
                                 {"checkpoint": ckpt}, {"checkpoint": ckpt})
        cells.append(cell)
        rows += got
    best = choose(rows)
    met = best is not None and best["n"] == 4 and best["room"] >= 0.15
    return {"protocol": str((HERE / "protocol.json").relative_to(HERE.parents[2])),
            "cells": cells, "regimes": rows, "chosen": best, "goal_met": met}


def markdown(result: dict[str, Any]) -> str:
    """Skill by checkpoint and depth, the ten largest rooms, the choice and the goal."""
    out = ["| checkpoint | depth | kept (task, seed) | successes within the longest H |",
           "|---|---|---|---|"]
    for cell in result["cells"]:
        pr = cell.get("prior")
        won = f"{pr['successes']} of {pr['rollouts']} (H {pr['horizon']})" if pr else "–"
        out.append(f"| {cell['checkpoint']} | {cell['depth']} | {cell['done']} of "
                   f"{cell['declared']} | {won} |")
    out += ["", "| checkpoint | depth | H | N | step | beta | Best-of-N | perfect | "
            "room [95% t] | exact p | ceiling calls |", "|" + "---|" * 11]
    for r in sorted(result["regimes"], key=lambda r: -r["room"])[:10]:
        out.append(f"| {r['checkpoint']} | {r['depth']} | {r['horizon']} | {r['n']} "
                   f"| {r['step']} | {r['beta']:g} | {fmt(r['best_of_n'])} "
                   f"| {fmt(r['perfect'])} | {fmt(r['room'], True)} "
                   f"[{fmt(r['room_lo'], True)}, {fmt(r['room_hi'], True)}] | {r['p']:.4f} "
                   f"| {r['rollout_ceiling_calls_ratio']:.1f}x |")
    ch = result["chosen"]
    out += ["", "No regime analysed yet meets the rule." if ch is None else
            f"Chosen: checkpoint {ch['checkpoint']}, depth {ch['depth']}, H {ch['horizon']}, "
            f"N {ch['n']}, resampling after step {ch['step']}, beta {ch['beta']:g}: room "
            f"{fmt(ch['room'], True)}, exact p {ch['p']:.4f}.",
            "Goal (room >= +0.15 at N = 4): " + ("met." if result["goal_met"] else "not met."),
            ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare room.json")
    args = ap.parse_args(argv)
    result = analyse()
    return publish(result, EVIDENCE, markdown(result), args.check)


if __name__ == "__main__":
    raise SystemExit(main())
