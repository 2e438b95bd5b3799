"""Environments (benchmarks) behind the :class:`~amc.protocols.Environment` protocol.

One folder per benchmark (``textcraft/``, ``sciworld/``, ``webshop/``): its environment and
suite, and its :class:`~amc.envs.benchmark.Benchmark` record (prompts, action parser, planner,
goal extraction, reward range, paper split), listed in :mod:`amc.envs.benchmarks`.
"""
