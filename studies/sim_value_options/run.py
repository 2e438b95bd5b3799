"""Issue 50 item 4: the simulation's TextCraft value re-chosen with issue 50's value options.

The declared protocol ``sweeps/protocol-issue50-sim.yaml`` lists the candidates (the issue-30
winner as the reference; the within-(task, step) objectives; the observed-state summary; a
fitted resampling temperature; listwise with the summary, with and without it) and the rule.
This runs it in four steps, each resumable (a step skips what is already on disk):

- ``values``: each non-reference candidate's value, trained by the sweep's value stage
  (:func:`studies.sweeps.value.run`) with the candidate's overrides -- the same planner-mix
  rollouts (same seeds) for all, one working folder per rendering so the frozen encoder's
  features are embedded once per rendering -- into ``sweeps/models/options/<name>``; its
  quality record (offline figures) into ``evidence/sim-value-options/values/<name>.json``;
- ``validation``: each candidate's validation cell (116 random train tasks x 6 seeds, N = 4,
  beta 0.05) into ``evidence/sim-value-options/runs/<name>/``; the reference's is the
  committed issue-30 record (:data:`REFERENCE_VALIDATION`), not rerun;
- ``test``: the rule's choice (:func:`studies.sweeps.protocol.choose`, every candidate's cell
  needed) runs its test cells at N = 4, 8, 15, each once (:mod:`studies.sweeps.once`, against
  its own folder); nothing runs when the reference is chosen (its test cells exist);
- ``report``: :mod:`studies.sim_value_options.report`.

Run from the repository root: ``python -m studies.sim_value_options.run all`` (or one step).
The cells and values run in ``sweeps/`` (the sweep's relative paths), without MLflow.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from studies.sweeps.config import CellParams, SweepParams, ValueParams, load_sweep_params
from studies.sweeps.harvest import read_record
from studies.sweeps.protocol import Candidate, Protocol, choose, load_protocol

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = ROOT / "sweeps" / "protocol-issue50-sim.yaml"
OUT = ROOT / "evidence" / "sim-value-options"
REFERENCE = "multi4-isotonic-b0.05"
"""The first candidate: the issue-30 winner, whose value and cells already ran."""
REFERENCE_VALIDATION = (ROOT / "evidence/runs" /
                        "validation-d2-q0.4-b0.05-every2-n4-learned-s1-seeds6-menu-v116r0"
                        "--splay-boar.json")
"""The reference's committed validation cell (its value: the kept 534748c239913a33)."""
REFERENCE_HASH = "534748c239913a33-isotonic-93d1479b"
"""The kept value's id as the issue-30 cells recorded it (content hash, calibration, digest)."""


def reference_test(n: int) -> Path:
    """The reference's committed test cell at N = n (issue 30's protocol)."""
    return ROOT / f"evidence/runs/test-d2-q0.4-b0.05-every2-n{n}-learned-s1-seeds6-menu.json"


def ceiling_test(n: int) -> Path:
    """The rollout value's committed test cell at N = n on the same pairs (the ceiling)."""
    return ROOT / f"evidence/runs/test-d2-q0.4-b0.05-every2-n{n}-rollout-s1-seeds6-menu.json"


def rendering(cand: Candidate) -> str:
    """The working folder of a candidate's rendering (features embedded once per rendering)."""
    return "summary" if cand.value.get("show_summary") else "plain"


def value_params(base: SweepParams, cand: Candidate) -> ValueParams:
    """The sweep's value section with the candidate's overrides and its own paths (relative
    to ``sweeps/``)."""
    return ValueParams.model_validate({
        **base.value.model_dump(), **cand.value,
        "work_dir": f"work/options/{rendering(cand)}",
        "out_dir": f"models/options/{cand.name}",
        "quality_file": str(OUT / "values" / f"{cand.name}.json")})


def cell_params(base: SweepParams, cand: Candidate, split: str, **over: Any) -> CellParams:
    """A learned cell of the candidate (its value, its cell overrides) on ``split``; its record
    goes to the candidate's own folder, which is also where a test cell checks it ran once."""
    runs = OUT / "runs" / cand.name
    return CellParams.model_validate({
        **base.cell.model_dump(), **cand.cell, **over, "split": split, "value": "learned",
        "value_model": f"models/options/{cand.name}", "evidence_dir": str(runs),
        "metrics_file": "work/options/metrics.json", "replication": None})


def record_path(cell: CellParams) -> Path:
    from studies.sweeps.cell import cell_name

    return Path(cell.evidence_dir) / f"{cell_name(cell)}.json"


def train_values(protocol: Protocol, base: SweepParams) -> None:
    """Every non-reference candidate's value (skipped when its quality record exists and its
    model folder still has that hash)."""
    from studies.sweeps.cell import dir_hash
    from studies.sweeps.value import run

    for cand in protocol.candidates[1:]:
        vp = value_params(base, cand)
        q, model = Path(vp.quality_file), Path(vp.out_dir)
        if q.is_file() and model.is_dir() and \
                json.loads(q.read_text())["model_hash"] == dir_hash(model):
            print(f"value {cand.name}: done", flush=True)
            continue
        print(f"value {cand.name}: training", flush=True)
        run(vp, base.cell, track=False)


def run_cells(cells: list[CellParams]) -> None:
    """Run each cell whose record is not on disk yet (a test cell refuses a second run)."""
    from studies.sweeps.cell import run

    for cell in cells:
        path = record_path(cell)
        if path.is_file():
            print(f"{path.name}: done", flush=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"cell {path.parent.name}/{path.name}: running", flush=True)
        run(cell.model_copy(update={"out_file": str(path)}), track=False, progress=True)


def validation_records(protocol: Protocol, base: SweepParams) -> dict[str, dict[str, Any]]:
    """Each candidate's validation record that is on disk (by name), checked to be of its
    value as it stands (a value retrained after its cell makes that cell stale: an error)."""
    out = {REFERENCE: read_record(REFERENCE_VALIDATION)}
    if out[REFERENCE]["value_model_hash"] != REFERENCE_HASH:
        raise ValueError("the reference's validation record is not of the kept value")
    for cand in protocol.candidates[1:]:
        path = record_path(cell_params(base, cand, "validation"))
        if not path.is_file():
            continue
        rec = read_record(path)
        quality = json.loads(Path(value_params(base, cand).quality_file).read_text())
        if rec["value_model_hash"] != quality["model_hash"]:
            raise ValueError(f"{cand.name}: its validation cell ran with value "
                             f"{rec['value_model_hash']}, its value is now {quality['model_hash']}")
        out[cand.name] = rec
    return out


def chosen(protocol: Protocol, base: SweepParams) -> Candidate:
    """The declared rule's choice (every candidate's validation cell needed)."""
    return choose(protocol, validation_records(protocol, base))


def test_cells(protocol: Protocol, base: SweepParams) -> list[CellParams]:
    """The chosen candidate's declared test cells (none when the reference is chosen)."""
    pick = chosen(protocol, base)
    if pick.name == REFERENCE:
        return []
    return [cell_params(base, pick, "test", **t) for t in protocol.test]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=("values", "validation", "test", "report", "all"))
    ap.add_argument("--only", help="validation: this candidate's cell only (one whose value "
                    "is trained, while the next values train)")
    args = ap.parse_args(argv)
    protocol = load_protocol(PROTOCOL)
    os.chdir(ROOT / "sweeps")  # the sweep's relative paths (models/, work/, the planner data)
    base = load_sweep_params()
    steps = ("values", "validation", "test", "report") if args.step == "all" else (args.step,)
    for step in steps:
        if step == "values":
            train_values(protocol, base)
        elif step == "validation":
            run_cells([cell_params(base, c, "validation") for c in protocol.candidates[1:]
                       if args.only in (None, c.name)])
        elif step == "test":
            cells = test_cells(protocol, base)
            print(f"chosen: {chosen(protocol, base).name}", flush=True)
            run_cells(cells)
        else:
            from studies.sim_value_options.report import write

            write(protocol, base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
