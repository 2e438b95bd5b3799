"""Fallback prompts for environments without their own (e.g. the synthetic tree)."""

from amc.priors.prompts import PromptSet, register

INSTRUCTION = """\
You are an agent acting in a text environment. Read each observation and choose the next \
action that brings you closer to the goal.
Answer every turn with two lines:
Thought: <your short reasoning>
Action: <exactly one action>"""

EXAMPLE = """\
Observation: You are in a corridor. Doors lead north and east. Goal: reach the library.
Action: go east
Observation: You are in the library. Task complete."""

PROMPTS = register("generic", PromptSet(INSTRUCTION, EXAMPLE))
