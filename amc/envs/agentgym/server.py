"""An AgentGym-compatible HTTP server for any registered AMC environment.

``create_app("textcraft", options)`` serves the environments of one registry entry
(:data:`amc.registry.ENVIRONMENTS`) with the endpoints and payloads of AgentGym's TextCraft
server, so AgentGym clients (and :mod:`amc.envs.agentgym.client`) work against it:

==========================  ========================  ==============================================
endpoint                    request                   response
==========================  ========================  ==============================================
``GET /``                                             ``"This is environment NAME."``
``POST /create``            ``{}`` (extra keys ok)    ``{"id", "observation", "done", "reward"}``
``POST /reset``             ``{"id", "data_idx"}``    ``{"id", "observation", "done", "reward"}``
``POST /step``              ``{"id", "action"}``      ``{"observation", "reward", "done", "info"}``
``GET /observation?id=``                              the current observation (str)
``GET /detail?id=``                                   ``{"observation", "done", "reward", ...}``
``POST /close``             ``{"id"}``                ``true``
``POST /fork`` (extension)  ``{"id"}``                a new independent env in the same state
``GET /valid_actions?id=``                            list of actions, or null (extension)
``GET /final_action?id=``                             forced last action, or null (extension)
``GET /task_ids?split=``                              task ids of a split (extension)
``GET /list_envs``                                    live env ids
==========================  ========================  ==============================================

``data_idx`` is the task id (an int, or a string for environments with named tasks); ``reward``
from ``/step`` is the per-step increment. Every request is validated: an unknown id is a 404,
stepping before ``/reset`` a 409, a bad task id a 400, a malformed body a 422, and more than
``max_envs`` live environments a 429 -- each with a one-line ``detail`` message, after which
the server keeps serving. Bind 127.0.0.1 (the CLI's default): there is no authentication;
:func:`serve` runs an app and warns on stderr when it binds anything but a loopback address.
``GET /available_actions?id=`` (extension) returns the env's ``available_actions()`` (WebShop's
``{"has_search_bar", "clickables"}``) or null.
"""

from __future__ import annotations

import contextlib
import ipaddress
import sys
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import Body, FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict, StrictStr

from amc.protocols import Environment, EnvSuite
from amc.registry import ENVIRONMENTS


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")  # AgentGym clients send extra keys


class CreateBody(_Body):
    commands: str | None = None
    goal: str | None = None


class IdBody(_Body):
    id: int


class ResetBody(IdBody):
    data_idx: int | StrictStr = 0


class StepBody(IdBody):
    action: StrictStr


@dataclass
class _Slot:
    env: Environment
    lock: threading.Lock = field(default_factory=threading.Lock)
    task_id: str | None = None
    observation: str = ""
    reward: float = 0.0
    done: bool = False


class EnvServer:
    """The live environments of one suite, keyed by integer id (thread-safe)."""

    def __init__(self, suite: EnvSuite, max_envs: int = 256) -> None:
        self.suite, self.max_envs = suite, max_envs
        self._slots: dict[int, _Slot] = {}
        self._next = 0
        self._lock = threading.Lock()

    def _add(self, env: Environment) -> tuple[int, _Slot]:
        with self._lock:
            if len(self._slots) >= self.max_envs:
                env.close()
                raise HTTPException(
                    429, f"too many live environments (limit {self.max_envs}); close some first"
                )
            i, self._next = self._next, self._next + 1
            slot = self._slots[i] = _Slot(env)
        return i, slot

    def slot(self, i: int) -> _Slot:
        with self._lock:
            s = self._slots.get(i)
        if s is None:
            raise HTTPException(404, f"unknown environment id {i}")
        return s

    def create(self) -> int:
        return self._add(self.suite.make())[0]

    def reset(self, i: int, task: str) -> _Slot:
        s = self.slot(i)
        with s.lock:
            try:
                obs = s.env.reset(task)
            except (ValueError, KeyError) as err:
                raise HTTPException(400, f"bad task {task!r}: {_msg(err)}") from None
            s.task_id, s.observation, s.reward, s.done = task, obs, 0.0, False
        return s

    def step(self, i: int, action: str) -> dict[str, Any]:
        s = self.slot(i)
        with s.lock:
            if s.task_id is None:
                raise HTTPException(409, f"environment {i} has not been reset")
            try:
                r = s.env.step(action)
            except Exception as err:  # an env bug must not take the server down
                msg = f"environment error: {type(err).__name__}: {err}"
                raise HTTPException(500, msg) from None
            s.observation, s.done = r.observation, r.done
            s.reward += r.reward
        return {"observation": r.observation, "reward": r.reward, "done": r.done,
                "info": _jsonable(r.info)}

    def fork(self, i: int) -> tuple[int, _Slot]:
        s = self.slot(i)
        with s.lock:
            if s.task_id is None:
                raise HTTPException(409, f"environment {i} has not been reset")
            child = s.env.fork()
            snapshot = (s.task_id, s.observation, s.reward, s.done)
        j, c = self._add(child)
        c.task_id, c.observation, c.reward, c.done = snapshot
        return j, c

    def close(self, i: int) -> None:
        with self._lock:
            s = self._slots.pop(i, None)
        if s is None:
            raise HTTPException(404, f"unknown environment id {i}")
        with s.lock:
            s.env.close()

    def close_all(self) -> None:
        with self._lock:
            slots, self._slots = list(self._slots.values()), {}
        for s in slots:
            s.env.close()
        self.suite.close()

    def ids(self) -> list[int]:
        with self._lock:
            return sorted(self._slots)


def _optional(s: _Slot, method: str) -> Any:
    """The env's optional ``method()`` (None if it has none or is not reset yet)."""
    fn = getattr(s.env, method, None)
    with s.lock:
        return None if s.task_id is None or fn is None else fn()


def _msg(err: BaseException) -> str:
    return str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)


def _jsonable(info: Any) -> dict[str, Any]:
    out = {}
    for k, v in dict(info).items():
        out[str(k)] = v if isinstance(v, str | int | float | bool | type(None)) else repr(v)
    return out


def create_app(
    env_name: str, env_options: dict[str, Any] | None = None, max_envs: int = 256
) -> FastAPI:
    """A FastAPI app serving the registered environment ``env_name`` (see module docstring)."""
    if max_envs < 1:
        raise ValueError(f"max_envs must be >= 1, got {max_envs}")
    suite = ENVIRONMENTS.build(env_name, env_options or {})
    server = EnvServer(suite, max_envs)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        server.close_all()  # on shutdown: release every live environment

    app = FastAPI(title=f"AMC environment server: {env_name}", lifespan=lifespan)
    app.state.env_server = server

    @app.get("/")
    def hello() -> str:
        return f"This is environment {env_name}."

    @app.post("/create")
    def create(body: CreateBody | None = Body(None)) -> dict[str, Any]:
        if body is not None and (body.commands is not None or body.goal is not None):
            raise HTTPException(400, "custom commands/goal are not supported; use /reset")
        return {"id": server.create(), "observation": "", "done": False, "reward": 0}

    @app.post("/reset")
    def reset(body: ResetBody) -> dict[str, Any]:
        s = server.reset(body.id, str(body.data_idx))
        return {"id": body.id, "observation": s.observation, "done": False, "reward": 0}

    @app.post("/step")
    def step(body: StepBody) -> dict[str, Any]:
        return server.step(body.id, body.action)

    @app.post("/fork")
    def fork(body: IdBody) -> dict[str, Any]:
        j, c = server.fork(body.id)
        return {"id": j, "observation": c.observation, "done": c.done, "reward": c.reward}

    @app.post("/close")
    def close(body: IdBody) -> bool:
        server.close(body.id)
        return True

    @app.get("/observation")
    def observation(id: int) -> str:
        return server.slot(id).observation

    @app.get("/detail")
    def detail(id: int) -> dict[str, Any]:
        s = server.slot(id)
        return {"observation": s.observation, "done": s.done, "reward": s.reward,
                "deleted": False, "task_id": s.task_id}

    @app.get("/valid_actions")
    def valid_actions(id: int) -> list[str] | None:
        s = server.slot(id)
        with s.lock:
            return None if s.task_id is None else s.env.valid_actions()

    @app.get("/final_action")
    def final_action(id: int) -> str | None:  # e.g. WebShop's forced buy after the last step
        return _optional(server.slot(id), "final_action")

    @app.get("/available_actions")
    def available_actions(id: int) -> dict[str, Any] | None:
        return _optional(server.slot(id), "available_actions")

    @app.get("/task_ids")
    def task_ids(split: str = "test") -> list[str]:
        try:
            return suite.task_ids(split)
        except (ValueError, KeyError) as err:
            raise HTTPException(400, _msg(err)) from None

    @app.get("/list_envs")
    def list_envs() -> list[int]:
        return server.ids()

    return app


def bind_warning(host: str) -> str | None:
    """A one-line warning when ``host`` is not a loopback address, else None."""
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: only localhost is known to stay on this machine
        loopback = host == "localhost"
    if loopback:
        return None
    return (f"warning: binding {host}: anyone who can reach this port can create, step and "
            "close environments (the server has no authentication); use 127.0.0.1 unless "
            "that is intended")


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 36001, *,
          allow_remote: bool = False) -> None:
    """Serve ``app`` with uvicorn until interrupted; a non-loopback ``host`` is announced on
    stderr (:func:`bind_warning`) unless ``allow_remote`` says it is intended."""
    import uvicorn

    msg = bind_warning(host)
    if msg and not allow_remote:
        print(msg, file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning")
