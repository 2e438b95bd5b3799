"""Rebuild an episode's state from its history by replay, with a cache of history prefixes.

Priors and values see a particle only as a :class:`~amc.types.History` (task id, initial
observation, actions so far); a simulated agent or a rollout value that needs the *state* has
to rebuild it. For a deterministic in-process environment the state after actions a_1..a_t is
the state of a fresh episode of the task after replaying them. :class:`ReplayCache` keeps the
environments of recently seen prefixes (an LRU keyed by (task id, actions)), so extending a
cached history by one action costs one ``fork`` and one ``step`` instead of t steps. The
environment's answer to the last action is kept too (:meth:`ReplayCache.step`), so a rollout
can advance through the cache and a prior sharing it finds every rollout state already there.

Cached environments are shared: callers must ``fork()`` one before stepping it; evicted ones
are left to the garbage collector (an in-process episode holds nothing to release). Only
environments that step in process (``io_bound = False``) are accepted: replaying a simulator
or a server in the event loop would block every other particle.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from amc.protocols import Environment, EnvSuite
from amc.registry import ENVIRONMENTS
from amc.types import EnvStep


def build_suite(env_name: str, env_options: Any) -> EnvSuite:
    """The suite a factory's ``env_name``/``env_options`` context names (options validated)."""
    if hasattr(env_options, "model_dump"):
        env_options = env_options.model_dump()
    if env_options is not None and not isinstance(env_options, Mapping):
        raise ValueError(f"env_options must be a mapping or an options model, got {env_options!r}")
    return ENVIRONMENTS.build(env_name, env_options or None)


class ReplayCache:
    """Environments at history prefixes: ``state(task, actions)`` -> a read-only environment."""

    def __init__(self, suite: EnvSuite, size: int = 16384) -> None:
        if size < 1:
            raise ValueError(f"replay cache size must be >= 1, got {size}")
        self.suite, self.size = suite, size
        self._envs: OrderedDict[tuple[str, tuple[str, ...]],
                                tuple[Environment, EnvStep | None]] = OrderedDict()
        self.stats = {"hits": 0, "replayed_steps": 0}

    def state(self, task_id: str, actions: tuple[str, ...], observation0: str | None = None
              ) -> Environment:
        """The environment after ``actions`` in a fresh episode of ``task_id`` (do not step it:
        fork it). ``observation0``, when given, must be the episode's initial observation."""
        return self._entry(task_id, actions, observation0)[0]

    def step(self, task_id: str, actions: tuple[str, ...], action: str
             ) -> tuple[Environment, EnvStep]:
        """(environment, answer) after ``actions`` then ``action`` (cached like any prefix)."""
        env, res = self._entry(task_id, (*actions, action), None)
        assert res is not None  # a non-empty prefix always has its last answer
        return env, res

    def _entry(self, task_id: str, actions: tuple[str, ...], observation0: str | None
               ) -> tuple[Environment, EnvStep | None]:
        key = (task_id, actions)
        hit = self._envs.get(key)
        if hit is not None:
            self._envs.move_to_end(key)
            self.stats["hits"] += 1
            return hit
        k = len(actions)
        while k > 0 and (task_id, actions[:k]) not in self._envs:
            k -= 1
        entry = self._envs.get((task_id, actions[:k])) or self._root(task_id, observation0)
        for j in range(k, len(actions)):
            env = entry[0].fork()
            entry = (env, env.step(actions[j]))
            self.stats["replayed_steps"] += 1
            self._put((task_id, actions[: j + 1]), entry)
        return entry

    def _root(self, task_id: str, observation0: str | None
              ) -> tuple[Environment, EnvStep | None]:
        env = self.suite.make()
        if env.io_bound:
            env.close()
            raise ValueError(f"replay needs an in-process environment; {self.suite.name} "
                             "does I/O (io_bound)")
        obs0 = env.reset(task_id)
        if observation0 is not None and obs0 != observation0:
            raise ValueError(f"replay of task {task_id!r} starts from another observation than "
                             "the history's: are the environment options the run's?")
        entry = (env, None)
        self._put((task_id, ()), entry)
        return entry

    def _put(self, key: tuple[str, tuple[str, ...]], entry: tuple[Environment, EnvStep | None]
             ) -> None:
        self._envs[key] = entry
        self._envs.move_to_end(key)
        while len(self._envs) > self.size:
            self._envs.popitem(last=False)  # in-process: nothing to release, GC frees it

    def clear(self) -> None:
        for env, _ in self._envs.values():
            env.close()
        self._envs.clear()
