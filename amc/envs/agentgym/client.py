"""An :class:`~amc.protocols.Environment` backed by an AgentGym HTTP environment server.

Speaks the AgentGym dialect of the benchmark the ``protocol`` option names: its
:class:`~amc.envs.agentgym.protocol.AgentGymProtocol` record, the ``agentgym`` field of the
benchmark's :class:`~amc.envs.benchmark.Benchmark` record, kept in the benchmark's folder and
looked up in :mod:`amc.envs.benchmarks` (``textcraft``, ``sciworld`` and ``webshop`` are built
in; ``textcraft``'s plain dialect is what ``amc serve-env`` speaks for any environment). The
record says which key names the server env, the reset and step payloads, whether ``/close``
may be missing, where valid actions come from and which action, if any, is forced after the
agent's last step (:meth:`AgentGymEnv.final_action`, e.g. WebShop's buy, ``amc-method.md``
§2.4; the client asks ``GET /final_action?id=`` only when the dialect says so). Adding a
dialect is a record in the benchmark's folder; this module never names a benchmark.

Requests retry on 503 and on connection failures (:mod:`~amc.envs.agentgym.transport`, the
one retry loop, with jitter); a read timeout on ``/step`` is never retried, because the server
may have executed the action. Every server env the suite creates is tracked and closed by
``env.close()`` or, failing that, by ``suite.close()``.

**Forking.** With ``fork: auto`` the client uses the server's ``POST /fork`` extension when it
exists (``amc serve-env`` has it) and otherwise *replays*: it creates a fresh server env, resets
it to the task and re-executes the action prefix, checking every observation, reward and done
flag against the recorded ones. A mismatch closes the new env and raises
:class:`ReplayDivergence` -- never a silently diverged particle (the reference client's TextCraft
clones shared one server env; see ``amc-method.md`` §2.5). ``/fork`` is probed exactly once per
suite, under a lock that concurrent first forks wait on.

**Valid actions.** The dialect's own (``valid_actions``), else the server's ``/valid_actions``;
without it (an upstream server) the dialect's ``derive_menu``, else None.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from amc.envs.agentgym.options import AgentGymError, AgentGymOptions, ReplayDivergence
from amc.envs.agentgym.transport import Jitter, send
from amc.envs.benchmarks import agentgym_protocol, paper_split
from amc.protocols import ForcesFinalAction
from amc.registry import ENVIRONMENTS
from amc.retry import RetryPolicy
from amc.types import EnvStep

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Rec:
    action: str
    observation: str
    reward: float
    done: bool


class AgentGymSuite:
    """One HTTP client shared by all envs of a run; tracks every server env it created."""

    name = "agentgym"

    def __init__(self, options: AgentGymOptions) -> None:
        self.options = options
        self.dialect = agentgym_protocol(options.protocol)
        self.http = httpx.Client(
            base_url=options.base_url.rstrip("/"),
            timeout=httpx.Timeout(options.timeout_s, connect=options.connect_timeout_s),
        )
        self.live: set[int] = set()
        self.server_fork: bool | None = {"server": True, "replay": False}.get(options.fork)
        self.has_valid_actions: bool | None = None  # None: not probed yet
        self.has_final_action: bool | None = None  # /final_action offered (amc serve-env)?
        self.has_available_actions: bool | None = None
        self._lock = threading.Lock()
        self.fork_probe_lock = threading.Lock()  # held while the first fork probes /fork
        self.retry = RetryPolicy(max_retries=options.retries, base_delay_s=options.backoff_s)
        self.jitter = Jitter()
        self.retries = 0
        """Retries made so far (all requests)."""

    # ----- HTTP -----
    def request(self, method: str, path: str, *, json_body: Any = None,
                params: dict[str, Any] | None = None, retry_read: bool = True) -> httpx.Response:
        """One request with retries on 503 / connection errors; HTTP errors raise."""
        return send(self, method, path, json_body=json_body, params=params,
                    retry_read=retry_read)

    def call(self, method: str, path: str, **kw: Any) -> Any:
        """A request whose non-2xx answer or ``{"error": ...}`` payload raises."""
        resp = self.request(method, path, **kw)
        if resp.status_code >= 400:
            try:
                detail = resp.json().get("detail", resp.text)
            except (ValueError, AttributeError):
                detail = resp.text
            raise AgentGymError(f"{method} {path}: HTTP {resp.status_code}: {detail}")
        data = resp.json()
        if isinstance(data, dict) and "error" in data:
            raise AgentGymError(f"{method} {path}: server error: {data['error']}")
        return data

    # ----- suite -----
    def make(self) -> AgentGymEnv:
        return AgentGymEnv(self)

    def task_ids(self, split: str) -> list[str]:
        o = self.options
        if split in o.task_ids:
            return [str(t) for t in o.task_ids[split]]
        if split in o.split_files:
            p = Path(o.split_files[split])
            if not p.is_file():
                raise FileNotFoundError(f"split file not found: {p}")
            text = p.read_text().strip()
            ids = json.loads(text) if text.startswith("[") else text.split()
            return [str(t) for t in ids]
        resp = self.request("GET", "/task_ids", params={"split": split})
        if resp.status_code == 200:
            return [str(t) for t in resp.json()]
        if resp.status_code in (404, 405) and split in ("train", "test"):
            # an upstream server: the paper's split for its benchmark, shipped with amc
            log.info("server has no /task_ids: the paper's %s %s split", o.protocol, split)
            return [str(t) for t in paper_split(o.protocol, split)]
        raise ValueError(
            f"no task ids for split {split!r}: set env.options.task_ids or split_files "
            f"(the server has no /task_ids for it: HTTP {resp.status_code})"
        )

    def close_server_env(self, env_id: int) -> None:
        resp = self.request("POST", "/close", json_body={self.dialect.id_key: env_id})
        if resp.status_code == 404 and self.dialect.close_may_be_missing:
            log.debug("%s server has no /close; env %s stays on the server",
                      self.options.protocol, env_id)
        elif resp.status_code >= 400:
            raise AgentGymError(f"POST /close {env_id}: HTTP {resp.status_code}: {resp.text}")
        with self._lock:
            self.live.discard(env_id)

    def close(self) -> None:
        """Close every server env still open, then the HTTP client."""
        with self._lock:
            left = sorted(self.live)
        for i in left:
            try:
                self.close_server_env(i)
            except AgentGymError as err:
                log.warning("could not close server env %s: %s", i, err)
        self.http.close()


class AgentGymEnv(ForcesFinalAction):
    """One server-side episode plus the local record of its steps (for replay forks)."""

    io_bound = True

    def __init__(self, suite: AgentGymSuite) -> None:
        self.suite = suite
        self.env_id: int | None = None
        self.task_id: str | None = None
        self.observation0 = ""
        self.records: list[_Rec] = []
        self.score = 0.0  # the dialect's running score (e.g. SciWorld's cumulative score / 100)

    @property
    def _key(self) -> str:
        return self.suite.dialect.id_key

    def _create(self) -> int:
        s = self.suite
        if s.dialect.create_body:
            env_id = int(s.call("POST", "/create", json_body={})["id"])
        else:
            env_id = int(s.call("POST", "/create"))
        with s._lock:
            s.live.add(env_id)
        return env_id

    def _reset_server(self, task_id: str) -> str:
        s, d = self.suite, self.suite.dialect
        assert self.env_id is not None
        idx: int | str = int(task_id) if task_id.strip().isdigit() else task_id
        return d.read_reset(s.call("POST", "/reset", json_body=d.reset_body(self.env_id, idx)))

    def reset(self, task_id: str) -> str:
        if self.env_id is None:
            self.env_id = self._create()
        try:
            obs = self._reset_server(str(task_id))
        except AgentGymError:
            self.close()
            raise
        self.task_id, self.observation0, self.records, self.score = str(task_id), obs, [], 0.0
        return obs

    def _step_server(self, action: str) -> EnvStep:
        s, d = self.suite, self.suite.dialect
        data = s.call("POST", "/step", json_body={self._key: self.env_id,
                                                  "action": d.send_action(action)},
                      retry_read=False)
        step, self.score = d.read_step(data, self.score)
        return step

    def step(self, action: str) -> EnvStep:
        if self.env_id is None or self.task_id is None:
            raise RuntimeError("reset() the environment before step()")
        r = self._step_server(action)
        self.records.append(_Rec(action, r.observation, r.reward, r.done))
        return r

    # ----- forking -----
    def fork(self) -> AgentGymEnv:
        if self.env_id is None or self.task_id is None:
            raise RuntimeError("reset() the environment before fork()")
        s = self.suite
        if s.server_fork is None:
            with s.fork_probe_lock:  # exactly one probe; concurrent first forks wait for it
                if s.server_fork is None and (child := self._probe_fork()) is not None:
                    return child
        if s.server_fork:
            resp = s.request("POST", "/fork", json_body={self._key: self.env_id})
            return self._server_child(resp)
        return self.replay_fork()

    def _probe_fork(self) -> AgentGymEnv | None:
        """The first fork of a run (under the probe lock): learn whether ``/fork`` exists;
        the server's child, or None when there is no /fork (the caller replays, unlocked)."""
        s = self.suite
        resp = s.request("POST", "/fork", json_body={self._key: self.env_id})
        if resp.status_code in (404, 405):
            s.server_fork = False  # the server has no /fork: verified replay from now on
            return None
        child = self._server_child(resp)
        s.server_fork = True
        return child

    def _server_child(self, resp: httpx.Response) -> AgentGymEnv:
        """The child env of a ``POST /fork`` answer (an HTTP error raises)."""
        if resp.status_code >= 400:
            raise AgentGymError(f"POST /fork: HTTP {resp.status_code}: {resp.text}")
        child = self._child()
        child.env_id = int(resp.json()["id"])
        with self.suite._lock:
            self.suite.live.add(child.env_id)
        return child

    def _child(self) -> AgentGymEnv:
        c = AgentGymEnv(self.suite)
        c.task_id, c.observation0, c.score = self.task_id, self.observation0, self.score
        c.records = list(self.records)
        return c

    def replay_fork(self) -> AgentGymEnv:
        """A fresh server env brought to this state by replaying and verifying every step."""
        assert self.task_id is not None
        c = AgentGymEnv(self.suite)
        obs0 = c.reset(self.task_id)
        try:
            if obs0 != self.observation0:
                raise ReplayDivergence(
                    f"replay of task {self.task_id}: the initial observation differs "
                    f"(expected {_clip(self.observation0)}, got {_clip(obs0)})"
                )
            for t, rec in enumerate(self.records):
                r = c.step(rec.action)
                if (r.observation, r.done) != (rec.observation, rec.done) or (
                    abs(r.reward - rec.reward) > 1e-9
                ):
                    raise ReplayDivergence(
                        f"replay of task {self.task_id} diverged at step {t + 1} "
                        f"({rec.action!r}): expected {_clip(rec.observation)} "
                        f"reward {rec.reward} done {rec.done}, got {_clip(r.observation)} "
                        f"reward {r.reward} done {r.done}"
                    )
        except BaseException:
            c.close()
            raise
        return c

    def valid_actions(self) -> list[str] | None:
        if self.env_id is None:
            return None
        s, d = self.suite, self.suite.dialect
        if d.valid_actions is not None:
            return d.valid_actions(self)
        if s.has_valid_actions is not False:
            resp = s.request("GET", "/valid_actions", params={"id": self.env_id})
            if resp.status_code == 200:
                return resp.json()
            if resp.status_code in (404, 405):
                s.has_valid_actions = False  # an upstream server: don't ask again
        return d.derive_menu(self) if d.derive_menu is not None else None

    def available_actions(self) -> dict[str, Any] | None:
        """The server's ``/available_actions`` (WebShop's ``{"has_search_bar", "clickables"}``),
        or None if the server has none."""
        s = self.suite
        if self.env_id is None or s.has_available_actions is False:
            return None
        key = self._key
        resp = s.request("GET", "/available_actions", params={key: self.env_id})
        if resp.status_code in (404, 405):
            s.has_available_actions = False
        data = resp.json() if resp.status_code == 200 else None
        return data if isinstance(data, dict) else None

    @property
    def done(self) -> bool:
        """Whether the last step ended the episode."""
        return bool(self.records) and self.records[-1].done

    def final_action(self) -> str | None:
        """The forced last action after the agent's steps, or None (see the module docstring)."""
        if self.env_id is None or self.task_id is None or self.done:
            return None
        return self.suite.dialect.final_action(self)

    def server_final_action(self) -> str | None:
        """The server's ``GET /final_action`` (``amc serve-env``: the served environment's own
        ``final_action()``); a server without it means none, and is not asked again."""
        s = self.suite
        if self.env_id is None or s.has_final_action is False:
            return None
        resp = s.request("GET", "/final_action", params={"id": self.env_id})
        if resp.status_code in (404, 405):
            s.has_final_action = False  # an upstream server: no forced action, don't ask again
            return None
        if resp.status_code >= 400:
            raise AgentGymError(f"GET /final_action: HTTP {resp.status_code}: {resp.text}")
        s.has_final_action = True
        data = resp.json()
        return data if isinstance(data, str) and data else None

    def close(self) -> None:
        if self.env_id is None:
            return
        env_id, self.env_id = self.env_id, None
        try:
            self.suite.close_server_env(env_id)
        except AgentGymError as err:  # suite.close() retries every env still listed as live
            log.warning("closing server env %s failed: %s", env_id, err)


def _clip(text: str, n: int = 120) -> str:
    return repr(text if len(text) <= n else text[:n] + "...")


@ENVIRONMENTS.register("agentgym", options=AgentGymOptions)
def make_agentgym_suite(options: AgentGymOptions) -> AgentGymSuite:
    """Any AgentGym HTTP environment server (the dialect of the benchmark ``protocol`` names)."""
    return AgentGymSuite(options)
