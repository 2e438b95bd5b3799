"""Options and errors of the AgentGym client (:mod:`amc.envs.agentgym.client`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from amc.config import Frozen
from amc.envs.benchmarks import agentgym_protocol
from amc.errors import ServiceUnavailable


class AgentGymError(ServiceUnavailable):
    """The server refused or failed a request (after retries)."""


class ReplayDivergence(AgentGymError):
    """Replaying an action prefix on a fresh server env did not reproduce the recording."""


class AgentGymOptions(Frozen):
    """Where the AgentGym server is and how to talk to it."""

    base_url: str = "http://127.0.0.1:36001"
    """Server address (scheme, host and port)."""
    protocol: str = "textcraft"
    """Which AgentGym payload dialect the server speaks: a benchmark whose record gives one
    (built in: textcraft, sciworld, webshop; amc serve-env speaks textcraft's)."""
    timeout_s: float = Field(60.0, gt=0)
    """Read timeout of one request in seconds (AgentGym's clients use 500)."""
    connect_timeout_s: float = Field(5.0, gt=0)
    """Connect timeout in seconds."""
    retries: int = Field(5, ge=0)
    """Retries of a request on 503 or connection errors."""
    backoff_s: float = Field(0.2, ge=0)
    """First retry delay in seconds; doubles on each retry."""
    fork: Literal["auto", "server", "replay"] = "auto"
    """auto: server /fork if offered, else verified replay; server or replay: force one."""
    split_files: dict[str, Path] = Field(default_factory=dict)
    """Split name -> file of task ids (one per line, or a JSON list), e.g. the paper's."""
    task_ids: dict[str, list[str]] = Field(default_factory=dict)
    """Split name -> explicit task ids (overrides split_files); else the server's /task_ids,
    else (an upstream server) the paper's train/test split of the protocol's benchmark."""
    forced_buy: bool = True
    """Protocol webshop: one forced click[Buy Now] after the agent's steps (the paper's)."""
    textcraft_recipes: str = "minecraft-data"
    """Protocol textcraft, server without /valid_actions: the recipe source (as TextCraft's
    recipe_source; the reference server's is the datapack folder) that tells base items and
    tag members apart when valid actions are derived from the listed crafting commands."""

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, name: str) -> str:
        agentgym_protocol(name)  # a clear error for a name without a dialect
        return name
