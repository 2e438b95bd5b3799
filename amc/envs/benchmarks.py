"""The table of :class:`~amc.envs.benchmark.Benchmark` records, looked up by name.

The built-in benchmarks (TextCraft, SciWorld, WebShop) are listed here once; another one
registers its record with :func:`register_benchmark` from its own folder (its suite factory
registers with :data:`amc.registry.ENVIRONMENTS` as usual). Lookups never fail: a name without
a record gets :data:`~amc.envs.generic.GENERIC`; :func:`paper_split` (the one way to the
paper's task ids by benchmark name) and :func:`agentgym_protocol` (the AgentGym client's
dialects) fail clearly for a name whose record has none.
"""

from __future__ import annotations

from amc.envs.agentgym.protocol import AgentGymProtocol
from amc.envs.benchmark import Benchmark
from amc.envs.generic import GENERIC
from amc.envs.sciworld.benchmark import BENCHMARK as SCIWORLD
from amc.envs.textcraft.benchmark import BENCHMARK as TEXTCRAFT
from amc.envs.webshop.benchmark import BENCHMARK as WEBSHOP

_TABLE: dict[str, Benchmark] = {b.name: b for b in (TEXTCRAFT, SCIWORLD, WEBSHOP)}


def register_benchmark(benchmark: Benchmark) -> Benchmark:
    """Add ``benchmark`` to the table (a second, different record under one name fails)."""
    old = _TABLE.get(benchmark.name)
    if old is not None and old != benchmark:
        raise ValueError(f"benchmark {benchmark.name!r} is registered twice")
    _TABLE[benchmark.name] = benchmark
    return benchmark


def benchmark_names() -> list[str]:
    """Names of the registered benchmarks, in registration order."""
    return list(_TABLE)


def get_benchmark(name: str | None) -> Benchmark:
    """The record registered as ``name`` (the generic one for any other name)."""
    return _TABLE.get(name or "", GENERIC)


def benchmark_in(env_name: str | None) -> Benchmark:
    """The first registered benchmark whose name occurs in ``env_name`` (lower-cased), else
    the generic one: how a value model's stored ``env`` (e.g. ``agentgym-textcraft``) is read."""
    name = (env_name or "").lower()
    return next((b for b in _TABLE.values() if b.name in name), GENERIC)


def paper_split(name: str, split: str) -> list[int]:
    """The paper's ``split`` ("train" or "test") of benchmark ``name``, from its record."""
    record = _TABLE.get(name)
    if record is None or record.paper_split is None:
        have = ", ".join(b.name for b in _TABLE.values() if b.paper_split is not None)
        raise ValueError(f"no packaged paper split for {name!r} (have {have})")
    return record.paper_split(split)


def agentgym_protocol(name: str) -> AgentGymProtocol:
    """The AgentGym dialect of benchmark ``name`` (the client's ``protocol`` option)."""
    record = _TABLE.get(name)
    if record is None or record.agentgym is None:
        raise ValueError(f"unknown AgentGym protocol {name!r} (have "
                         f"{', '.join(agentgym_protocols())}); a benchmark gives its own "
                         "with the agentgym field of its Benchmark record")
    return record.agentgym


def agentgym_protocols() -> list[str]:
    """Names of the benchmarks whose records give an AgentGym dialect."""
    return [b.name for b in _TABLE.values() if b.agentgym is not None]
