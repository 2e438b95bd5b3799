"""The generic benchmark record: environments without their own (e.g. the synthetic tree).

Fallback prompts, a whitespace-collapsing action normaliser and a marker-based goal extractor;
the helpers :func:`collapse` and :func:`first_line` are shared with the benchmarks' records.
"""

import re

from amc.envs.benchmark import Benchmark, PromptSet

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

PROMPTS = PromptSet(INSTRUCTION, EXAMPLE)

_WS = re.compile(r"\s+")


def collapse(s: str) -> str:
    """Runs of whitespace as one space, stripped."""
    return _WS.sub(" ", s).strip()


def first_line(text: str) -> str:
    """The first non-empty line, stripped ("" when there is none)."""
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def normalise(a: str) -> str:
    """Whitespace collapsed, a trailing period dropped."""
    return collapse(a).rstrip(".")


def extract_instruction(obs: str) -> str:
    """The text after the first ``Goal:``/``Instruction:``/``Task:`` marker, else line one."""
    for marker in ("Goal:", "Instruction:", "Task:"):
        if marker in obs:
            return first_line(obs.split(marker, 1)[1])
    return first_line(obs)


GENERIC = Benchmark("generic", PROMPTS, normalise, extract_instruction)
"""The record of every environment that registers none."""
