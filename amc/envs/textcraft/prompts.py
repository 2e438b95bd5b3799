"""TextCraft prompts: craft a Minecraft item from listed recipes with get/craft/inventory."""

from amc.envs.benchmark import PromptSet

INSTRUCTION = """\
You are playing a text-only crafting game set in Minecraft. At the start you see a list of \
crafting commands that are available in this game and the item you must make.
You can act with three commands:
- get <count> <item>: take basic materials (logs, stone, iron ingots, ...) from the world.
- craft <count> <item> using <count> <ingredient>, <count> <ingredient>: make an item from \
ingredients that are in your inventory, exactly as one of the listed crafting commands says.
- inventory: show what you are holding.
Plan backwards from the goal: find the recipe of the goal, then the recipes of its \
ingredients, and gather only basic materials with get.
Answer every turn with two lines:
Thought: <your short reasoning about what is still missing>
Action: <exactly one command>"""

EXAMPLE = """\
Observation: Crafting commands:
craft 1 blue dye using 1 lapis lazuli
craft 4 birch planks using 1 birch log
craft 1 crafting table using 4 birch planks
craft 4 stick using 2 birch planks
craft 1 wooden shovel using 1 birch planks, 2 stick

Goal: craft wooden shovel.
Action: get 1 birch log
Observation: Got 1 birch log
Action: craft 4 birch planks using 1 birch log
Observation: Crafted 4 minecraft:birch_planks
Action: craft 4 stick using 2 birch planks
Observation: Crafted 4 minecraft:stick
Action: craft 1 wooden shovel using 1 birch planks, 2 stick
Observation: Crafted 1 minecraft:wooden_shovel"""

MENU_EXAMPLE = """\
Observation: Crafting commands:
craft 1 blue dye using 1 lapis lazuli
craft 4 birch planks using 1 birch log
craft 4 stick using 2 birch planks
craft 1 wooden shovel using 1 birch planks, 2 stick

Goal: craft wooden shovel.
Valid actions now:
1. inventory
2. get 1 birch log
3. get 1 lapis lazuli
Action: get 1 birch log
Observation: Got 1 birch log
Valid actions now:
1. inventory
2. get 1 birch log
3. get 1 lapis lazuli
4. craft 4 birch planks using 1 birch log
Action: craft 4 birch planks using 1 birch log
Observation: Crafted 4 minecraft:birch_planks
Valid actions now:
1. inventory
2. get 1 birch log
3. get 1 lapis lazuli
4. craft 4 stick using 2 birch planks
Action: craft 4 stick using 2 birch planks
Observation: Crafted 4 minecraft:stick
Valid actions now:
1. inventory
2. get 1 birch log
3. get 1 lapis lazuli
4. craft 4 stick using 2 birch planks
5. craft 1 wooden shovel using 1 birch planks, 2 stick
Action: craft 1 wooden shovel using 1 birch planks, 2 stick
Observation: Crafted 1 minecraft:wooden_shovel"""

PROMPTS = PromptSet(INSTRUCTION, EXAMPLE, menu_example=MENU_EXAMPLE)
