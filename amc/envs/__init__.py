"""Environments (benchmarks) behind the :class:`~amc.protocols.Environment` protocol."""
