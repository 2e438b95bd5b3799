"""How the fine-tuned prior fails in the regime search's rollouts: the lever for the next SFT run.

Per kept cell (checkpoint, depth), over every Best-of-8 rollout: the share that succeed; the
share of actions that repeat the rollout's previous action verbatim; the share of actions that
are a ``get`` of an item the rollout already got; the share of rollouts whose actions are all
``get``s (never crafting); and the share of a rollout's steps at which its action is the
planner's action from the state it was in (the held-out greedy accuracy's on-policy analogue).
Writes ``evidence/sft-prior/failure-modes.md``.

    python -m studies.sft_prior.failure_modes
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.priors.planner_mix import load_planner
from amc.types import History
from amc.value.room import success_step
from studies.llm_regime.regime_search.analyse import read_records, task_histories
from studies.sft_prior.regime_search.run import EVIDENCE, REPO, protocol, step_dir

OUT = REPO / "evidence/sft-prior/failure-modes.md"


def planner_agreement(histories: list[History], depth: int) -> float:
    """Share of steps whose action is the planner's from the state the rollout was in."""
    env = TextCraftSuite(TextCraftOptions(min_depth=depth, max_depth=depth,
                                          n_distractors=10)).make()
    hooks = load_planner("textcraft")
    agree = total = 0
    for h in histories:
        env.reset(h.task_id)
        for step in h.steps:
            want = hooks.next_action(env)
            if want is not None and hooks.to_menu is not None:
                want = hooks.to_menu(env, want)  # the menu's form, as the prior writes it
            agree += int(want is not None and want.strip() == step.action.strip())
            total += 1
            env.step(step.action)
    return agree / total if total else float("nan")


def got(action: str) -> str | None:
    """The item of a ``get <count> <item>`` action (None for any other action)."""
    parts = action.split(" ", 2)
    return parts[2] if len(parts) == 3 and parts[0] == "get" else None


def cell_modes(histories: list[History], depth: int) -> dict[str, Any]:
    acts = [[s.action.strip() for s in h.steps] for h in histories]
    pairs = [(a, b) for xs in acts for a, b in itertools.pairwise(xs)]
    gets = [(got(x), {got(y) for y in xs[:i]}) for xs in acts for i, x in enumerate(xs)
            if got(x) is not None]
    got_before = [x in prev for x, prev in gets]
    return {"rollouts": len(histories),
            "success": float(np.mean([success_step(h, 1.0) is not None for h in histories])),
            "repeat_previous": float(np.mean([a == b for a, b in pairs])) if pairs else 0.0,
            "get_again": float(np.mean(got_before)) if got_before else 0.0,
            "never_craft": float(np.mean([all(x.startswith("get ") or x == "inventory"
                                              for x in xs) for xs in acts])),
            "planner_agreement": planner_agreement(histories, depth)}


def main() -> int:
    c = protocol()["candidates"]
    lines = ["| checkpoint | depth | rollouts | success | repeats previous action | gets an "
             "item again | never crafts | agrees with the planner |", "|" + "---|" * 8]
    from studies.sft_prior.dagger.analyse import cells as dagger_cells

    kept = [(ckpt, depth, EVIDENCE / step_dir(ckpt) / f"depth{depth}")
            for ckpt, depth in itertools.product(c["checkpoint"], c["depth"])]
    kept += [(label, 2, folder) for label, folder in dagger_cells(2)[1:]]  # the DAgger round's
    for ckpt, depth, folder in kept:
        if not folder.is_dir():
            continue
        hs = [h for v in task_histories(read_records(folder)).values() for _, _, h in v]
        m = cell_modes(hs, depth)
        lines.append(f"| {ckpt} | {depth} | {m['rollouts']} | {m['success']:.3f} | "
                     f"{m['repeat_previous']:.3f} | {m['get_again']:.3f} | "
                     f"{m['never_craft']:.3f} | {m['planner_agreement']:.3f} |")
    text = ("Shares over the kept search rollouts (studies/sft_prior/failure_modes.py): of "
            "rollouts (success, never crafts), of consecutive action pairs (repeats), of `get` "
            "actions (gets an item it already got), of steps (agrees with the planner's action "
            "from the rollout's own state).\n\n" + "\n".join(lines) + "\n")
    OUT.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
