"""One AgentGym payload dialect: the :class:`AgentGymProtocol` record a benchmark folder exports.

AgentGym's environment servers share their endpoints (``/create``, ``/reset``, ``/step``,
``/close``) but not their payloads: the key naming the server env, the reset body, the shape
of a step's answer, whether ``/close`` exists, where valid actions come from and whether an
action is forced after the agent's last step. A benchmark states its dialect once, as the
``agentgym`` field of its :class:`~amc.envs.benchmark.Benchmark` record, and the client
(:mod:`amc.envs.agentgym.client`) looks it up by the ``protocol`` option's name; the client
never names a benchmark.

The defaults are the plain dialect that ``amc serve-env`` speaks for any environment:
``POST /create {}`` -> ``{"id"}``; ``/reset {"id", "data_idx"}`` -> ``{"observation"}``;
``/step {"id", "action"}`` -> ``{"observation", "reward", "done", "info"?}``; ``/close {"id"}``.
The hooks get plain payloads (or, for the menu and the final action, the client's env, whose
``suite.options`` and HTTP helpers they may use) and return plain values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from amc.types import EnvStep

Idx = int | str
"""A task id as sent to the server: an integer when it is all digits, else the string."""


def reset_body(env_id: int, idx: Idx) -> dict[str, Any]:
    """The plain ``/reset`` body."""
    return {"id": env_id, "data_idx": idx}


def read_observation(data: Any) -> str:
    """The first observation of a plain ``/reset`` answer."""
    return str(data["observation"])


def read_step(data: Any, score: float) -> tuple[EnvStep, float]:
    """A plain ``/step`` answer as an :class:`EnvStep` (its ``info`` kept when a dict); the
    running score is not used by this dialect and passes through unchanged."""
    info = data.get("info") or {}
    step = EnvStep(str(data["observation"]), float(data["reward"] or 0), bool(data["done"]),
                   info if isinstance(info, dict) else {})
    return step, score


def as_sent(action: str) -> str:
    """The action as the agent wrote it (the default: nothing is changed)."""
    return action


def no_final_action(env: Any) -> str | None:
    """No forced last action (the default)."""
    return None


@dataclass(frozen=True)
class AgentGymProtocol:
    """How one benchmark's AgentGym server wants to be spoken to (defaults: the plain dialect)."""

    id_key: str = "id"
    """The body / query key naming the server env (``/reset``, ``/step``, ``/close``, ...)."""
    create_body: bool = True
    """``POST /create`` sends ``{}`` and answers ``{"id"}``; False: no body, the answer is the
    bare integer id."""
    reset_body: Callable[[int, Idx], dict[str, Any]] = reset_body
    """(server env id, task id) -> the ``/reset`` body."""
    read_reset: Callable[[Any], str] = read_observation
    """The ``/reset`` answer -> the first observation."""
    send_action: Callable[[str], str] = as_sent
    """The agent's action -> the ``action`` field of ``/step``."""
    read_step: Callable[[Any, float], tuple[EnvStep, float]] = read_step
    """(``/step`` answer, the env's running score) -> (the step, the new running score); the
    score starts at 0 on reset and is copied into forks (e.g. a cumulative server score whose
    increments are the rewards)."""
    close_may_be_missing: bool = False
    """A 404 on ``/close`` is accepted (the server cannot release its environments)."""
    valid_actions: Callable[[Any], list[str] | None] | None = None
    """The env -> its valid actions, instead of asking the server's ``/valid_actions``."""
    derive_menu: Callable[[Any], list[str] | None] | None = None
    """The env -> its valid actions when the server has no ``/valid_actions`` (None: none)."""
    final_action: Callable[[Any], str | None] = no_final_action
    """The env (episode running) -> the action forced after the agent's last step, or None."""


PLAIN = AgentGymProtocol()
"""The plain dialect (``amc serve-env``'s)."""


def server_final_action(env: Any) -> str | None:
    """Ask the server (``GET /final_action``; ``amc serve-env`` has it, an upstream server not)."""
    return env.server_final_action()
