"""The second DAgger round's results: its SFT run on own states, and the plan-band cell.

Keeps the round's SFT metrics (``--keep-sft``, once after the run: ``sft/out-dagger2`` is not in
git) at ``evidence/sft-prior/dagger2/sft-metrics.json`` and writes ``sft-run.md`` from them;
analyses the kept plan-band cell by the plan-band protocol's declared analysis
(:mod:`studies.sft_prior.band.analyse`) into ``band/result.json`` and ``band/result.md``;
``--check`` recomputes result.json and compares.

    python -m studies.sft_prior.dagger2.analyse --keep-sft   # once, after the round's SFT run
    python -m studies.sft_prior.dagger2.analyse [--check]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from studies.sft_prior.band import analyse as band
from studies.sft_prior.cells import keep_or_check
from studies.sft_prior.dagger import analyse as round1
from studies.sft_prior.dagger2.band import HERE, KEPT, REPO, cell_protocol

OUT = REPO / "evidence/sft-prior/dagger2"
SFT_METRICS = OUT / "sft-metrics.json"


def sft_markdown(m: dict[str, Any]) -> str:
    return (f"The second DAgger round from dagger1-100: {m['pairs']} pairs ({m['own_pairs']} "
            f"labelling the priors' own states, both rounds), {m['steps']} steps, "
            f"{m['costs']['wall_s']:.0f} s wall, {m['costs']['cpu_s']:.0f} s CPU. Held-out = "
            "the first run's held-out tasks (never trained on by any run); own-state = their "
            "pairs labelling states checkpoint 244's and dagger1-100's own rollouts reached. "
            "Chosen (declared rule: best own-state greedy accuracy, ties later): step "
            f"{m['chosen_step']}.\n\n" + round1.sft_table(m, "dagger1-100"))


def kept_protocol(kept: Path = KEPT, here: Path = HERE,
                  protocol: Callable[[Path], dict[str, Any]] = cell_protocol) -> dict[str, Any]:
    """The cell protocol (``protocol(adapter)``) with the round's kept checkpoint (the only one
    kept under ``kept``) and the declaration time of ``here/protocol.json``."""
    (step,) = sorted(kept.glob("step-*"))
    p = protocol(step)
    p["declared_utc"] = json.loads((here / "protocol.json").read_text())["declared_utc"]
    return p


def report(argv: list[str] | None, out: Path, run: Path, p: Callable[[], dict[str, Any]],
           sft_md: Callable[[dict[str, Any]], str], source: str, label: str,
           extra: Callable[[dict[str, Any]], str] | None = None) -> int:
    """A DAgger round's analysis command line: ``--keep-sft`` keeps the SFT run ``run``'s
    metrics under ``out``; ``sft-run.md`` from them (``sft_md``); the kept plan-band cell in
    ``out/band`` analysed under ``p()`` (its prior named "``label`` DAgger checkpoint") into
    result.json/.md (``extra`` adds entries to the result and returns a paragraph for the
    markdown); ``--check`` recomputes result.json."""
    ap = argparse.ArgumentParser(description="a DAgger round's SFT run and plan-band cell")
    ap.add_argument("--check", action="store_true", help="recompute and compare result.json")
    ap.add_argument("--keep-sft", action="store_true", help="keep the round's SFT metrics")
    a = ap.parse_args(argv)
    metrics, cell = out / "sft-metrics.json", out / "band"
    if a.keep_sft:
        round1.keep_sft(run, metrics)
    if metrics.is_file() and not a.check:
        (out / "sft-run.md").write_text(sft_md(json.loads(metrics.read_text())))
    if not list(cell.glob("*.jsonl.gz")):
        print("no plan-band records kept yet")
        return 0
    proto = p()
    r = band.analyse(cell, proto)
    more = extra(r) if extra else ""
    adapter = proto["prior"]["options"]["adapter"]
    md = band.markdown(r, proto, source, f"{label} DAgger checkpoint {adapter}")
    return keep_or_check(cell, r, md + (f"\n{more}" if more else ""), a.check)


def main(argv: list[str] | None = None) -> int:
    return report(argv, OUT, REPO / "sft/out-dagger2", kept_protocol, sft_markdown,
                  "studies/sft_prior/dagger2/protocol.json (the plan-band design)", "Round-2")


if __name__ == "__main__":
    raise SystemExit(main())
