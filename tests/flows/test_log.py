"""Library prints stay out of the flows' run logs; the flows' own messages (``say``) go in.

A retraining run's logs were a quarter Python bytecode a dependency printed while Prefect copied
prints into the logs (``log_prints=True``). Every flow of the package turns that off, no task
turns it back on, and a real run with the retraining flow's setting logs what ``say`` says and
none of a ``dis`` dump printed in the flow and in a task (the control run, with prints copied,
shows the check sees such lines).
"""

from __future__ import annotations

import dis
import importlib
import pkgutil
from typing import Any
from uuid import UUID

import pytest
from prefect import Flow, Task, flow, task
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
from prefect.logging.handlers import APILogHandler

import flows
from flows._log import say
from flows.retrain_and_promote import retrain_and_promote


def _members() -> list[tuple[str, Any]]:
    out = []
    for mod in pkgutil.iter_modules(flows.__path__):
        m = importlib.import_module(f"flows.{mod.name}")
        out += [(f"{mod.name}.{k}", v) for k, v in vars(m).items()
                if isinstance(v, Flow | Task) and v.__module__ == m.__name__]
    return out


MEMBERS = _members()


def test_the_package_has_flows_and_tasks() -> None:
    kinds = {type(v) for _, v in MEMBERS}
    assert any(issubclass(k, Flow) for k in kinds) and any(issubclass(k, Task) for k in kinds)
    assert "retrain_and_promote.retrain_and_promote" in dict(MEMBERS)


@pytest.mark.parametrize("name", [n for n, _ in MEMBERS])
def test_no_flow_or_task_copies_prints_into_its_logs(name: str) -> None:
    obj = dict(MEMBERS)[name]
    # a flow says False (not None: a PREFECT_LOGGING_LOG_PRINTS setting cannot turn it on);
    # a task inherits its flow's (None) and never sets True
    assert obj.log_prints is False if isinstance(obj, Flow) else obj.log_prints is not True


DUMP = dis.Bytecode(say).dis()  # what the library printed: lines of Python bytecode
LINES = [ln.strip() for ln in DUMP.splitlines() if ln.strip()]


@task(name="log-probe-task")
def _probe_task() -> None:
    print(DUMP)
    say("probe task message")


def _probe_body() -> None:
    print(DUMP)
    _probe_task()
    say("probe flow message")


async def _messages(flow_run_id: UUID) -> list[str]:
    await APILogHandler.aflush()
    async with get_client() as client:
        logs = await client.read_logs(log_filter=LogFilter(
            flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
    return [log.message for log in logs]


def _run(log_prints: bool) -> UUID:
    probe = flow(name="amc-log-probe", log_prints=log_prints)(_probe_body)
    state = probe(return_state=True)
    assert state.is_completed()
    return state.state_details.flow_run_id


async def test_a_run_logs_say_and_not_library_prints() -> None:
    import asyncio

    assert len(LINES) > 5
    quiet = await _messages(await asyncio.to_thread(_run, retrain_and_promote.log_prints))
    assert {"probe flow message", "probe task message"} <= set(quiet)
    assert not [m for m in quiet if any(ln in m for ln in LINES)]
    # control: with prints copied, the same run's logs hold the dump (the check can see it)
    loud = await _messages(await asyncio.to_thread(_run, True))
    assert sum(DUMP.strip() in m for m in loud) == 2
