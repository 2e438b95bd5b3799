"""The DAgger round's search cell: its declared checkpoint at depth 2, collected and kept.

    python -m studies.sft_prior.dagger.search [--depth 2] [--seed S] [--keep-only]

1. the checkpoint is chosen by ``protocol.json``'s rule from the round's SFT run
   (``sft/out-dagger1``): the highest held-out greedy action accuracy on the prior's own states
   (ties: the later), and kept in git under ``sft/kept/textcraft-dagger1/step-NNNNNN``;
2. ``amc run`` plays the regime search's collection (Best-of-8, seeds 0 and 1, the same
   validation tasks, the same prior options) with that adapter into
   ``runs/sft-dagger/search/depthD-seedS`` (``--seed``: one declared seed per process, so the
   two run side by side; finished (task, seed) results survive restarts);
3. the finished seed files are gzipped into ``evidence/sft-prior/dagger/search/depthD/``.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
from pathlib import Path
from typing import Any

from studies.sft_prior.cells import keep_gz, play_and_keep
from studies.sft_prior.regime_search import run as search

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
STAGE = REPO / "sft/out-dagger1/checkpoints"
KEPT = REPO / "sft/kept/textcraft-dagger1"
RUNS = REPO / "runs/sft-dagger/search"
EVIDENCE = REPO / "evidence/sft-prior/dagger/search"
FILES = ("adapter_model.safetensors", "adapter_config.json", "policy.json")


def chosen_step(checkpoints: Path = STAGE) -> tuple[int, float]:
    """The declared rule over the run's checkpoints: (step, own-state greedy accuracy) of the
    highest held-out greedy action accuracy on the prior's own states; ties: the later."""
    best: tuple[int, float] | None = None
    for meta in sorted(checkpoints.glob("step-*/policy.json")):
        m = json.loads(meta.read_text())
        acc = m.get("val_action_acc_own")
        if acc is None:
            raise ValueError(f"{meta}: no own-state accuracy (not a DAgger run?)")
        if best is None or acc >= best[1]:
            best = (int(m["step"]), float(acc))
    if best is None:
        raise FileNotFoundError(f"{checkpoints}: no checkpoints yet (run the DAgger SFT)")
    return best


def keep_adapter(step: int, stage: Path = STAGE, kept_dir: Path = KEPT) -> Path:
    """The kept copy under ``kept_dir`` of the chosen checkpoint of the run whose checkpoints
    are in ``stage`` (refused if a kept copy differs: another run)."""
    kept, made = kept_dir / search.step_dir(step), stage / search.step_dir(step)
    if kept.is_dir():
        if made.is_dir() and not filecmp.cmp(kept / FILES[0], made / FILES[0], shallow=False):
            raise SystemExit(f"error: {made} differs from the kept {kept}: another SFT run")
        return kept
    kept.mkdir(parents=True, exist_ok=True)  # two seeds' processes may both get here
    for f in FILES:
        shutil.copy2(made / f, kept / f)
    return kept


def config(step: int, depth: int, seed: int) -> dict[str, Any]:
    """The regime search's ``amc run`` configuration of one declared seed, DAgger adapter."""
    seeds = search.protocol()["collection"]["seeds"]
    if seed not in seeds:
        raise ValueError(f"seed {seed} is not declared ({seeds})")
    cfg = search.config(step, depth, adapter=keep_adapter(step))
    cfg["seeds"] = [seed]
    cfg["out_dir"] = str((RUNS / f"depth{depth}-seed{seed}").relative_to(REPO))
    return cfg


def keep_results(depth: int) -> int:
    """Gzip the cell's complete seed-file lines (both seeds' folders) into the evidence
    folder; returns them."""
    return keep_gz(RUNS.glob(f"depth{depth}-seed*/bon@*__seed*.jsonl"),
                   EVIDENCE / f"depth{depth}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depth", type=int, default=2, choices=[2, 3])
    ap.add_argument("--seed", type=int, default=0, help="the declared seed to play")
    ap.add_argument("--keep-only", action="store_true", help="only keep finished results")
    a = ap.parse_args(argv)

    def make_config() -> dict[str, Any]:
        step, acc = chosen_step(STAGE if STAGE.is_dir() else KEPT)
        print(f"DAgger checkpoint {step} (held-out own-state greedy accuracy {acc:.3f})")
        return config(step, a.depth, a.seed)

    return play_and_keep(
        make_config, RUNS / f"depth{a.depth}-seed{a.seed}.yaml",
        lambda: f"kept {keep_results(a.depth)} records of the DAgger cell at depth {a.depth}",
        a.keep_only, "--seed")

if __name__ == "__main__":
    raise SystemExit(main())
