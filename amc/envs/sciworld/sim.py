"""ScienceWorld simulators (one JVM each) and a bounded pool that leases them to particles.

ScienceWorld is a Scala simulator behind py4j: every :class:`Simulator` is its own JVM
(about 340 MB resident with ``-Xmx384m``, 1-2 s to start) and it has no save/load. Particles
therefore own their *episode record* (the actions and the answers they got); a simulator is
only a cache of that record, rebuilt by loading the game and replaying the actions.

:class:`SimulatorPool` keeps at most ``max_instances`` JVMs alive and leases them:

- a :class:`Lease` belongs to one particle (one environment) and holds at most one simulator;
- ``pin(lease)`` gives the lease's simulator for one operation; a lease without one gets an
  idle simulator, a newly started one (below the cap), or -- at the cap -- the least recently
  used simulator of another particle that is not pinned right now (*eviction*); the pool
  then says the simulator is ``fresh`` and the caller rebuilds its state by replay;
- a simulator is pinned by one lease at a time and owned by at most one lease: the pool
  checks this invariant on every hand-out and never gives one simulator to two particles;
- ``release(lease)`` returns the simulator to the idle list. Idle simulators are *reset*:
  whoever gets one next reloads a game first, so no state passes from one particle to
  another;
- ``close()`` shuts every JVM down. Each JVM is also started with py4j's ``die_on_exit``
  (it exits when this process's pipe closes) and every pool is closed at interpreter exit,
  so no JVM outlives the run.

The cap bounds memory; when more particles are stepping than there are simulators, particles
take turns and pay a replay (about 5-15 ms per recorded action) each time they get one back.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

try:
    from py4j.protocol import Py4JError, Py4JJavaError, Py4JNetworkError
except ModuleNotFoundError:  # pragma: no cover - py4j comes with scienceworld

    class Py4JError(Exception):  # type: ignore[no-redef]
        pass

    class Py4JJavaError(Py4JError):  # type: ignore[no-redef]
        pass

    class Py4JNetworkError(Py4JError):  # type: ignore[no-redef]
        pass


T = TypeVar("T")

_ENV_LOCK = threading.Lock()  # JAVA_TOOL_OPTIONS is read from os.environ at JVM start
_POOLS: weakref.WeakSet[SimulatorPool] = weakref.WeakSet()


class SimulatorError(RuntimeError):
    """A simulator could not be started or stopped responding."""


class Simulator:
    """One ScienceWorld JVM, driven through the simulator's raw interface.

    The package's ``ScienceWorldEnv.step`` also recomputes look, inventory and every valid
    action after each move (40-70 ms); the raw calls used here take 4-15 ms and give the same
    observation, score and completion flag.
    """

    def __init__(self, java_options: str, ident: int) -> None:
        if shutil.which("java") is None:
            raise SimulatorError(
                "Java not found: ScienceWorld needs a JRE >= 8 on PATH "
                "(Debian: apt-get install default-jre-headless; scripts/setup.sh does this)"
            )
        try:
            from scienceworld import ScienceWorldEnv
        except ModuleNotFoundError as err:  # pragma: no cover - it is a pinned dependency
            raise SimulatorError("the scienceworld package is not installed") from err
        with _ENV_LOCK:  # the JVM inherits JAVA_TOOL_OPTIONS; restore it for everyone else
            old = os.environ.get("JAVA_TOOL_OPTIONS")
            if java_options:
                os.environ["JAVA_TOOL_OPTIONS"] = f"{old} {java_options}" if old else java_options
            try:
                self._env = ScienceWorldEnv("", envStepLimit=10**9)  # we count steps ourselves
            except Exception as err:
                raise SimulatorError(f"could not start the ScienceWorld JVM: {err}") from err
            finally:
                if old is None:
                    os.environ.pop("JAVA_TOOL_OPTIONS", None)
                else:
                    os.environ["JAVA_TOOL_OPTIONS"] = old
        self.ident = ident
        self._server = self._env.server
        self.closed = False

    # -- the game ---------------------------------------------------------------------------
    def load(self, task_name: str, variation: int, simplification: str) -> str:
        """Load a game (a full re-initialisation); returns its task description."""
        self._env.load(task_name, variation, simplification)
        return str(self._server.getTaskDescription())

    def step(self, action: str) -> tuple[str, int, bool]:
        """(observation, score in -100..100, completed) after ``action``."""
        obs = str(self._server.step(action))
        score = round(100 * float(self._server.getScore()))  # as ScienceWorldEnv.step rounds
        return obs, score, bool(self._server.getCompleted())

    def valid_actions(self) -> list[str]:
        """Every action/object combination valid now, sorted (expensive: 70-130 ms)."""
        return sorted(str(a) for a in self._server.getValidActionObjectCombinations())

    def gold_actions(self, task_name: str, variation: int, simplification: str) -> list[str]:
        """The simulator's gold action sequence for a game (reloads the game)."""
        self._env.load(task_name, variation, simplification, generateGoldPath=True)
        return [str(a) for a in self._env.get_gold_action_sequence()]

    def task_variations(self) -> list[tuple[str, str, int]]:
        """(task id, task name, number of variations) for every ScienceWorld task."""
        return [(k, v, int(self._env.get_max_variations(v))) for k, v in self._env.tasks.items()]

    # -- process ----------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        """Process id of the JVM."""
        return int(self._env._gateway.java_process.pid)

    def alive(self) -> bool:
        return not self.closed and self._env._gateway.java_process.poll() is None

    def rss_bytes(self) -> int:
        """Resident memory of the JVM process (Linux /proc), 0 if unknown."""
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024  # kB
        except OSError:
            pass
        return 0

    def close(self) -> None:
        """Shut the JVM down and wait for it (idempotent)."""
        if self.closed:
            return
        self.closed = True
        gateway = self._env._gateway
        proc = gateway.java_process
        with contextlib.suppress(Exception):
            if proc.poll() is None:
                self._env.close()
            else:  # the JVM is gone: only stop the Python side (no connection attempts)
                gateway.shutdown_callback_server()
                gateway.close()
        try:
            proc.wait(timeout=10)
        except Exception:
            with contextlib.suppress(Exception):
                proc.kill()
                proc.wait(timeout=10)


@dataclass(eq=False)
class Lease:
    """One particle's claim on the pool: at most one simulator, pinned during an operation."""

    pool: SimulatorPool
    sim: Simulator | None = None
    pinned: bool = False
    last_used: int = 0
    closed: bool = False


@dataclass
class PoolStats:
    """Counters of a pool (for benchmarks and tests)."""

    started: int = 0
    handouts: int = 0
    evictions: int = 0
    peak_live: int = 0
    waits: int = 0


class SimulatorPool:
    """At most ``max_instances`` warm simulators, leased to particles (see module docs)."""

    def __init__(
        self, max_instances: int, java_options: str = "-Xmx384m", acquire_timeout_s: float = 600
    ) -> None:
        if max_instances < 1:
            raise ValueError(f"max_instances must be >= 1, got {max_instances}")
        self.max_instances = max_instances
        self.java_options = java_options
        self.acquire_timeout_s = acquire_timeout_s
        self._cond = threading.Condition()
        self._all: list[Simulator] = []
        self._idle: list[Simulator] = []
        self._holders: dict[int, Lease] = {}  # simulator ident -> lease holding it
        self._starting = 0
        self._next_ident = 0
        self._clock = 0
        self._closed = False
        self.stats = PoolStats()
        _POOLS.add(self)

    def lease(self) -> Lease:
        """A new, empty lease for one particle."""
        if self._closed:
            raise SimulatorError("the ScienceWorld simulator pool is closed")
        return Lease(self)

    @property
    def live(self) -> int:
        """JVMs alive now."""
        with self._cond:
            return len(self._all)

    def simulators(self) -> list[Simulator]:
        with self._cond:
            return list(self._all)

    def pin(self, lease: Lease) -> tuple[Simulator, bool]:
        """Pin the lease's simulator, getting one first if needed; ``fresh`` means reload it."""
        deadline = time.monotonic() + self.acquire_timeout_s
        with self._cond:
            while True:
                if self._closed or lease.closed:
                    raise SimulatorError("the ScienceWorld simulator pool or lease is closed")
                if lease.pinned:
                    raise RuntimeError("a SciWorld environment was used from two threads at once")
                if lease.sim is not None:
                    lease.pinned = True
                    return lease.sim, False
                sim = self._take_locked(lease)
                if sim is None and len(self._all) + self._starting < self.max_instances:
                    self._starting += 1
                    ident = self._next_ident  # taken under the lock: starts run concurrently
                    self._next_ident += 1
                    self._cond.release()
                    try:
                        sim = Simulator(self.java_options, ident=ident)
                    finally:
                        self._cond.acquire()
                        self._starting -= 1
                    self.stats.started += 1
                    if self._closed:  # closed while it started
                        sim.close()
                        continue
                    self._all.append(sim)
                    self.stats.peak_live = max(self.stats.peak_live, len(self._all))
                if sim is not None:
                    self._give_locked(sim, lease)
                    return sim, True
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SimulatorError(
                        f"no ScienceWorld simulator became free in {self.acquire_timeout_s:.0f}s "
                        f"(all {self.max_instances} are busy; raise env.options.pool_size)"
                    )
                self.stats.waits += 1
                self._cond.wait(timeout=min(left, 1.0))

    def _take_locked(self, lease: Lease) -> Simulator | None:
        """An idle simulator, or the least recently used unpinned one of another lease."""
        if self._idle:
            return self._idle.pop()
        if len(self._all) + self._starting < self.max_instances:
            return None  # the caller starts a new one
        victims = [h for h in self._holders.values() if h is not lease and not h.pinned]
        if not victims:
            return None
        victim = min(victims, key=lambda h: h.last_used)
        sim = victim.sim
        assert sim is not None
        victim.sim = None
        del self._holders[sim.ident]
        self.stats.evictions += 1
        return sim

    def _give_locked(self, sim: Simulator, lease: Lease) -> None:
        # The invariant the particles rely on: one simulator, one holder.
        if sim.ident in self._holders or any(h.sim is sim for h in self._holders.values()):
            raise AssertionError(f"simulator {sim.ident} is already held by another particle")
        lease.sim, lease.pinned = sim, True
        self._holders[sim.ident] = lease
        self.stats.handouts += 1

    def unpin(self, lease: Lease, drop: Literal["keep", "idle", "close"] = "keep") -> None:
        """End an operation. ``drop``: give the simulator up, to the idle list (its state is
        unknown, so the next holder reloads it) or closed (its JVM is broken)."""
        with self._cond:
            lease.pinned = False
            self._clock += 1
            lease.last_used = self._clock
            if drop != "keep" or lease.closed:
                self._drop_locked(lease, dead=drop == "close")
            self._cond.notify_all()

    def release(self, lease: Lease) -> None:
        """The particle is finished: its simulator goes back to the idle list (idempotent)."""
        with self._cond:
            lease.closed = True
            if not lease.pinned:
                self._drop_locked(lease, dead=False)
            self._cond.notify_all()

    def _drop_locked(self, lease: Lease, dead: bool) -> None:
        sim, lease.sim = lease.sim, None
        if sim is None:
            return
        self._holders.pop(sim.ident, None)
        if dead or not sim.alive():
            self._all.remove(sim)
            sim.close()
        elif not self._closed:
            self._idle.append(sim)  # reset: the next holder reloads a game before any use

    def run(self, fn: Callable[[Simulator], T]) -> T:
        """Call ``fn(simulator)`` on a pooled simulator that is fresh to the caller."""
        lease = self.lease()
        try:
            sim, _ = self.pin(lease)
            try:
                return fn(sim)
            finally:
                self.unpin(lease)
        finally:
            self.release(lease)

    def trim(self, keep: int = 0) -> int:
        """Shut down idle simulators beyond ``keep`` (frees memory); returns how many."""
        with self._cond:
            extra = self._idle[keep:]
            del self._idle[keep:]
            for sim in extra:
                self._all.remove(sim)
        for sim in extra:
            sim.close()
        return len(extra)

    def close(self) -> None:
        """Shut every JVM down (idempotent); later pins fail with a clear error."""
        with self._cond:
            self._closed = True
            sims, self._all, self._idle = list(self._all), [], []
            for h in self._holders.values():
                h.sim = None
            self._holders.clear()
            self._cond.notify_all()
        for s in sims:
            s.close()


@atexit.register
def _close_all_pools() -> None:
    for pool in list(_POOLS):
        pool.close()
