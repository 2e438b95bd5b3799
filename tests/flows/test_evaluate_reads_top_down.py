"""The scheduled evaluation reads top to bottom: flow -> stage -> shared helpers, then drift.

One real scheduled evaluation (``evaluate_flow(monitor_drift=True)`` with a champion, toy
size) runs under a profiler that records every call entering a module of the pipeline
(``flows.*``, ``amc.pipeline.*``, ``amc.monitor.*``) from another module. The layers are the
flows, the stages (``amc.pipeline.<stage>``, ``amc.monitor.drift``) and the shared helpers
(the other ``amc.pipeline`` / ``amc.monitor`` modules); a newcomer following the evaluation
must be able to read them top to bottom:

- every call goes down (flow -> stage -> helper) or sideways within the flows or the helpers,
  never up: no helper or engine module calls back into a stage or a flow (no callbacks), and
  the module graph has no cycle (no back-and-forth between helper modules);
- each flow task makes one stage call (``plan``, ``run_unit``, ``close``);
- the stages are entered as contiguous blocks: the evaluation's, then the drift monitor's,
  which only its own flow (``flows.drift``, a subflow the evaluation calls once) enters.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple

import yaml

from flows.evaluate import evaluate_flow
from tests.flows.test_flows import artifact
from tests.pipeline.conftest import register_version

STAGES = {f"amc.pipeline.{s}" for s in ("collect", "dataset", "train", "evaluate", "promote",
                                        "report")} | {"amc.monitor.drift"}
TASKS = {"plan", "run_unit", "finalize"}
"""The evaluate flow's task functions (each one stage call)."""
FORMATTERS = {"line"}
"""Pure functions of a stage that the flow body calls to print the stage's own line (issue 63):
formatting a returned record, not entering the stage (the flow body shares a task's thread)."""


class Entry(NamedTuple):
    """A call entering ``module`` (function ``func``) from ``caller``'s module."""

    thread: int
    caller: str
    module: str
    func: str


def layer(module: str) -> int | None:
    """0 flow, 1 stage, 2 shared helper, 3 the rest of ``amc``; None outside the product."""
    if module.startswith("flows."):
        return 0
    if module in STAGES:
        return 1
    if module.startswith(("amc.pipeline.", "amc.monitor.")):
        return 2
    return 3 if module.startswith("amc.") else None


def traced(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, list[Entry]]:
    """``fn(*args, **kwargs)`` and the pipeline module entries it made, in call order (every
    thread; imports, i.e. module bodies, left out)."""
    entries: list[Entry] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        module = frame.f_globals.get("__name__", "")
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
        if caller != module and layer(module) in (0, 1, 2):
            entries.append(Entry(threading.get_ident(), caller, module, frame.f_code.co_name))

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        return fn(*args, **kwargs), entries
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def collapse(seq: list[str]) -> list[str]:
    """``seq`` without consecutive repeats."""
    return [m for i, m in enumerate(seq) if i == 0 or seq[i - 1] != m]


def cycle(edges: set[tuple[str, str]]) -> list[str] | None:
    """A cycle of the directed module graph, or None."""
    succ: dict[str, set[str]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(succ.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt] if nxt in path else [node, nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for n in sorted(succ):
        if n not in state and (found := visit(n, [n])):
            return found
    return None


def stage_calls_per_task(entries: list[Entry]) -> list[int]:
    """For each flow task run, how many times it entered a stage directly."""
    counts: dict[int, int] = {}  # thread -> index of its current task run in `out`
    out: list[int] = []
    for e in entries:
        if e.module == "flows.evaluate" and e.func in TASKS and layer(e.caller) is None:
            counts[e.thread] = len(out)
            out.append(0)
        elif (e.caller == "flows.evaluate" and e.module in STAGES and e.thread in counts
              and e.func not in FORMATTERS):
            out[counts[e.thread]] += 1
    return out


def test_the_scheduled_evaluation_reads_top_to_bottom(workdir: Path) -> None:
    register_version(workdir, 1.0)
    register_version(workdir, 1.0, alias="champion")
    p = yaml.safe_load(Path("params.yaml").read_text())
    Path("params.yaml").write_text(yaml.safe_dump(
        {**p, "drift": {"enabled": True, "trigger": None, "calibration_states": 10}}))

    path, entries = traced(evaluate_flow, "params.yaml", [], monitor_drift=True)

    ev = json.loads(Path(path).read_text())
    assert ev["status"] == "complete" and "smc@8+champion" in ev["methods"]
    assert json.loads(Path("data/drift/latest.json").read_text())["drift"] is not None
    md = asyncio.run(artifact("amc-evaluation"))
    assert md is not None and "smc@8+challenger" in md.data  # type: ignore[attr-defined]
    for key in ("amc-evaluation-table", "amc-drift"):
        assert asyncio.run(artifact(key)) is not None

    up = {(e.caller, e.module, e.func) for e in entries if layer(e.caller) is not None
          and layer(e.caller) > layer(e.module)}  # type: ignore[operator]
    assert not up, f"calls back up the layers: {sorted(up)}"
    stage_to_stage = {(e.caller, e.module) for e in entries
                      if e.caller in STAGES and e.module in STAGES}
    assert not stage_to_stage
    edges = {(e.caller, e.module) for e in entries if layer(e.caller) in (0, 1, 2)}
    assert cycle(edges) is None, f"back-and-forth between modules: {cycle(edges)}"

    calls = stage_calls_per_task(entries)
    assert calls == [1] * (1 + 3 * 2 + 1)  # plan, 3 specs x 2 seeds, finalize
    stages = collapse([e.module for e in entries if e.module in STAGES])
    assert stages == ["amc.pipeline.evaluate", "amc.monitor.drift"], stages
    assert [e.func for e in entries if e.module == "flows.drift" and e.func == "drift_flow"] \
        == ["drift_flow"]
    assert {e.caller for e in entries if e.module == "amc.monitor.drift"} == {"flows.drift"}
