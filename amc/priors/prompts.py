"""ReAct prompts per environment, and how a particle's history becomes a prompt.

Each benchmark's record (:class:`~amc.envs.benchmark.Benchmark`) holds a
:class:`~amc.envs.benchmark.PromptSet` (in its own folder, written in our words): an
instruction, a worked example of a *different* task (few-shot transcripts for completion
models), and optionally a ReflAct instruction. Three styles are rendered from it:

- ``react``: Thought/Action turns; chat models get the instruction as the system message.
- ``reflact``: like ``react`` but each turn opens with ``Reflection:`` (SciWorld).
- ``menu``: the current valid actions are listed, numbered, and the model picks one (the only
  way a sub-billion-parameter model acts sensibly; still black-box sampling).

Chat rendering (:func:`chat_messages`) ends with the latest observation as a user message.
Completion rendering (:func:`completion_prompt`) is a plain transcript that ends with
``Action:``; the model writes only the action and stops at the newline. The layout is stable
(instruction, example, task, steps) so providers' prefix caches and llama.cpp's KV reuse hit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from amc.envs.benchmark import PromptSet
from amc.envs.benchmarks import get_benchmark
from amc.types import History

Style = Literal["react", "reflact", "menu"]


def get_prompts(env: str) -> PromptSet:
    """The prompts of ``env``'s benchmark record (the generic set for environments without)."""
    return get_benchmark(env).prompts


MENU_HEADER = "Valid actions now:"
MENU_ASK = "Pick exactly one valid action: write 'Action: ' and then its number or its text."


def menu_text(valid_actions: Sequence[str], limit: int) -> str:
    """The numbered list of valid actions (at most ``limit`` entries)."""
    lines = [f"{i}. {a}" for i, a in enumerate(valid_actions[:limit], 1)]
    return "\n".join([MENU_HEADER, *lines])


def _effective(style: Style, history: History) -> Style:
    """``menu`` needs valid actions; without them the prompt is plain ReAct."""
    return "react" if style == "menu" and not history.valid_actions else style


def _instruction(p: PromptSet, style: Style) -> str:
    text = p.reflact_instruction if style == "reflact" and p.reflact_instruction else p.instruction
    if style == "menu":
        text += "\n\nEach observation is followed by the list of valid actions. " + MENU_ASK
    return text


def _window(history: History, max_steps: int) -> tuple[int, list]:
    """The last ``max_steps`` steps (older ones are dropped to fit the context)."""
    steps = list(history.steps)
    skipped = max(0, len(steps) - max_steps)
    return skipped, steps[skipped:]


def _assistant_text(raw_text: str, action: str) -> str:
    return raw_text.strip() if "action:" in raw_text.lower() else f"Action: {action}"


def chat_messages(
    history: History, env: str, style: Style = "react", *, max_steps: int = 30, menu_limit: int = 60
) -> list[dict[str, str]]:
    """OpenAI chat messages for the next turn of ``history``."""
    p, style = get_prompts(env), _effective(style, history)
    msgs = [
        {"role": "system", "content": _instruction(p, style)},
        {"role": "user", "content": history.observation0},
    ]
    skipped, steps = _window(history, max_steps)
    if skipped:
        msgs[1]["content"] += f"\n\n({skipped} earlier steps are not shown.)"
    for s in steps:
        msgs.append({"role": "assistant", "content": _assistant_text(s.raw_text, s.action)})
        msgs.append({"role": "user", "content": s.observation})
    if style == "menu" and history.valid_actions:
        msgs[-1]["content"] += "\n\n" + menu_text(history.valid_actions, menu_limit)
        msgs[-1]["content"] += "\n" + MENU_ASK
    return msgs


def completion_prompt(
    history: History, env: str, style: Style = "react", *, max_steps: int = 30,
    menu_limit: int = 60, few_shot: bool = True, instruction: bool = True,
) -> str:
    """A few-shot transcript for a base/completion model; it ends with ``Action:``.

    ``few_shot=False`` drops the solved example and ``instruction=False`` the instruction: with
    both off it is the compact prompt of a model fine-tuned on this very layout
    (:mod:`amc.sft`), which starts at the task's first observation (TextCraft depth 2: median
    ~450 tokens instead of ~985, paid at every training sequence and every call)."""
    p, style = get_prompts(env), _effective(style, history)
    parts = [_instruction(p, style), ""] if instruction else []
    if few_shot:
        example = p.menu_example if style == "menu" and p.menu_example else p.example
        parts += ["Here is a solved example of a different task.", "", example.strip(), "",
                  "Now the real task.", ""]
    parts.append(f"Observation: {history.observation0}")
    skipped, steps = _window(history, max_steps)
    if skipped:
        parts.append(f"({skipped} earlier steps are not shown.)")
    for s in steps:
        parts += [f"Action: {s.action}", f"Observation: {s.observation}"]
    if style == "menu" and history.valid_actions:
        parts.append(menu_text(history.valid_actions, menu_limit))
    parts.append("Action:")
    return "\n".join(parts)
