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
from typing import Any

from studies.sft_prior.band import analyse as band
from studies.sft_prior.dagger import analyse as round1
from studies.sft_prior.dagger2.band import EVIDENCE, HERE, REPO, cell_protocol

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


def kept_protocol() -> dict[str, Any]:
    """The plan-band protocol with the round's kept checkpoint (the only one kept)."""
    (step,) = sorted((REPO / "sft/kept/textcraft-dagger2").glob("step-*"))
    p = cell_protocol(step)
    p["declared_utc"] = json.loads((HERE / "protocol.json").read_text())["declared_utc"]
    return p


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare result.json")
    ap.add_argument("--keep-sft", action="store_true", help="keep the round's SFT metrics")
    a = ap.parse_args(argv)
    if a.keep_sft:
        round1.keep_sft(REPO / "sft/out-dagger2", SFT_METRICS)
    if SFT_METRICS.is_file() and not a.check:
        (OUT / "sft-run.md").write_text(sft_markdown(json.loads(SFT_METRICS.read_text())))
    if not list(EVIDENCE.glob("*.jsonl.gz")):
        print("no plan-band records kept yet")
        return 0
    p = kept_protocol()
    r = band.analyse(EVIDENCE, p)
    text = json.dumps(r, indent=1, sort_keys=True) + "\n"
    if a.check:
        same = (EVIDENCE / "result.json").read_text() == text
        print("result.json recomputes exactly" if same else "result.json DIFFERS")
        return 0 if same else 1
    md = band.markdown(r, p, "studies/sft_prior/dagger2/protocol.json (the plan-band design)",
                       f"Round-2 DAgger checkpoint {p['prior']['options']['adapter']}")
    (EVIDENCE / "result.json").write_text(text)
    (EVIDENCE / "result.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
