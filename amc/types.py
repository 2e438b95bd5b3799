"""Records shared by every part of AMC: usage, agent turns, environment steps, histories.

All records are small frozen dataclasses so that a particle's history can be shared between
resampled copies without copying, and so that a run is a list of values that can be written to
JSON lines, replayed and compared.

- :class:`Usage` counts tokens, calls and dollars; ``+`` adds two ledgers.
- :class:`AgentTurn` is what a :class:`~amc.protocols.Prior` returns for one agent turn.
- :class:`Step` is one agent turn plus the environment's answer to it.
- :class:`History` is what a prior and a value function see of a particle: the task, the
  initial observation and the steps so far (plus, transiently, the actions valid now).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

INVALID_ACTION = "[invalid action]"
"""The action a prior returns when the model's text could not be parsed into an action.

Environments answer it with an error observation and reward 0; it is never an exception."""


@dataclass(frozen=True)
class Usage:
    """Tokens, calls and dollars spent; ``a + b`` adds ledgers field by field."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    calls: int = 0
    retries: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Usage:
        return cls(**{k: d[k] for k in (f.name for f in fields(cls)) if k in d})


@dataclass(frozen=True)
class AgentTurn:
    """One sample from the black-box agent: its raw text, the parsed action and what it cost.

    ``error`` is set (and ``action`` is meaningless) when the call failed for good, e.g. a 401,
    a context overflow or an exhausted budget; the driver then retires the particle.
    """

    raw_text: str
    action: str
    usage: Usage = Usage()
    error: str | None = None


@dataclass(frozen=True)
class Step:
    """One transition of a particle: the agent's turn and the environment's answer."""

    raw_text: str
    action: str
    observation: str
    reward: float
    done: bool
    usage: Usage = Usage()
    info: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["info"] = dict(self.info)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Step:
        return cls(
            raw_text=d["raw_text"],
            action=d["action"],
            observation=d["observation"],
            reward=float(d["reward"]),
            done=bool(d["done"]),
            usage=Usage.from_dict(d.get("usage", {})),
            info=dict(d.get("info", {})),
        )


@dataclass(frozen=True)
class History:
    """A particle's state as its prior and value function see it.

    ``valid_actions`` is the environment's list of actions that can succeed *now* (for
    action-menu prompts); it is attached by the driver just before a proposal and is not part
    of the recorded trajectory. ``budget`` is the episode's step budget when the driver knows it
    (its ``max_steps``): a finite-horizon value depends on the steps left, so a value model may
    be shown them (:class:`amc.value.render.RenderOptions` ``show_budget``).
    """

    task_id: str
    observation0: str
    steps: tuple[Step, ...] = ()
    valid_actions: tuple[str, ...] | None = None
    budget: int | None = None

    @property
    def steps_left(self) -> int | None:
        """Steps the budget still allows (None when the budget is unknown)."""
        return None if self.budget is None else max(self.budget - self.t, 0)

    @property
    def t(self) -> int:
        """Number of steps taken so far."""
        return len(self.steps)

    @property
    def observation(self) -> str:
        """The current observation (the initial one before any step)."""
        return self.steps[-1].observation if self.steps else self.observation0

    @property
    def total_reward(self) -> float:
        """Sum of per-step rewards so far."""
        return float(sum(s.reward for s in self.steps))

    @property
    def done(self) -> bool:
        """Whether the last step ended the episode."""
        return bool(self.steps) and self.steps[-1].done

    @property
    def actions(self) -> tuple[str, ...]:
        """The parsed actions taken so far, in order (what a replay fork re-executes)."""
        return tuple(s.action for s in self.steps)

    def prefix(self, t: int) -> History:
        """The state after the first ``t`` steps (same task and budget, no valid actions)."""
        return replace(self, steps=self.steps[:t], valid_actions=None)

    def extend(self, step: Step) -> History:
        """A new history with ``step`` appended (valid actions cleared)."""
        return replace(self, steps=(*self.steps, step), valid_actions=None)

    def with_valid_actions(self, actions: list[str] | tuple[str, ...] | None) -> History:
        """The same history, annotated with the actions valid in the current state."""
        return replace(self, valid_actions=None if actions is None else tuple(actions))


@dataclass(frozen=True)
class EnvStep:
    """What :meth:`~amc.protocols.Environment.step` returns.

    ``reward`` is the per-step increment (the weight update adds it); ``info`` may carry the
    benchmark's own score or an error message.
    """

    observation: str
    reward: float
    done: bool
    info: Mapping[str, Any] = field(default_factory=dict)
