"""TextCraft: craft a Minecraft item from listed crafting commands (AgentGym's benchmark).

- :mod:`.benchmark` -- its :class:`~amc.envs.benchmark.Benchmark` record (:mod:`.prompts`: prompts).
- :mod:`.env` -- the environment (exact AgentGym parsing, inventory, rewards) and its suite.
- :mod:`.recipes` -- the recipe tree: which items craft from which, and crafting depth.
- :mod:`.sources` -- where recipes come from (minecraft-data offline, or the datapack JSON).
- :mod:`.tasks` -- task ids, splits and distractor commands.
- :mod:`.fetch` -- ``amc fetch textcraft``: the benchmark's recipes and the paper's split.
"""
