"""ScienceWorld: elementary science tasks in a Java text simulator (AgentGym's indexing).

- :mod:`.benchmark` -- its :class:`~amc.envs.benchmark.Benchmark` record (:mod:`.prompts`: prompts).
- :mod:`.env` -- the environment, its suite and the task-id/split mapping.
- :mod:`.sim` -- a bounded pool of warm simulators; forks are verified replays.
"""
