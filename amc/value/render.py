"""The ONE state -> text renderer of the value model, shared by training and inference.

The reference implementation rendered states one way when it built the training set and another
way when it scored particles (a dropped first round, trailing spaces, different preambles), and
right-truncated long prompts so the *current* state was cut first. Here a single function,
:func:`render`, turns an :class:`~amc.types.History` into text; the dataset builder and the
scorers both call it with the same :class:`RenderOptions` (which are stored with the dataset and
with the trained model, so inference re-uses exactly the training settings).

Layout (sections always in this order, so the current state is always last)::

    {preamble}

    === INSTRUCTION ===
    {goal extracted from the initial observation}

    === HISTORY ===
    (3 earlier rounds omitted)
    Round 4 - STATE:
    ...
    Round 4 - ACTION:
    ...

    === NOW ===
    [STEPS LEFT] {k} of {T}     (only with ``show_budget`` and a history that carries a budget)
    [STATE] {current observation, never truncated}

Truncation: at most ``history_k`` most recent (state, action) pairs are kept; if a token budget
(``max_tokens``, counted with the model's tokenizer) is set, the *oldest* pairs are dropped
first until the text fits, then the instruction is shortened; the current state is never cut.

Why the steps left: under a step budget the value of a state is finite-horizon -- the same
inventory is worth more with three steps left than with one -- and the round number alone does
not say how many remain when budgets differ by task (time-aware values: Pardo et al., "Time
Limits in Reinforcement Learning", ICML 2018).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import Field

from amc.config import Frozen
from amc.envs.benchmarks import benchmark_in, get_benchmark
from amc.types import History

DEFAULT_PREAMBLE = (
    "You are a value model for a text-based agent. Given the task instruction, the recent "
    "history and the current state, predict the reward the agent will still collect."
)

TokenCounter = Callable[[str], int]


class RenderOptions(Frozen):
    """How a particle's history becomes the value model's input text."""

    env: str = "generic"
    """Whose instruction extractor to use: a registered benchmark's name, else generic."""
    history_k: int = Field(20, ge=0)
    """K: at most this many most recent (state, action) pairs are shown."""
    max_tokens: int | None = Field(None, ge=16)
    """Token budget of the whole text (None: no budget); old history is dropped first."""
    preamble: str = DEFAULT_PREAMBLE
    """Fixed text that opens every rendering."""
    show_budget: bool = False
    """Show ``[STEPS LEFT] k of T`` in NOW when the history carries its step budget."""


def render_env_for(env_name: str | None) -> str:
    """The renderer flavour of an environment name: the registered benchmark it names, if any
    (``agentgym-textcraft`` -> ``textcraft``), else ``generic``."""
    return benchmark_in(env_name).name


# ---------------------------------------------------------------- instruction extraction


def extract_instruction(observation0: str, env: str) -> str:
    """The task's goal/instruction as found in its initial observation, by ``env``'s benchmark
    record (:attr:`~amc.envs.benchmark.Benchmark.extract_instruction`; e.g. TextCraft: the text
    after ``Goal:``; generic: the text after the first ``Goal:``/``Instruction:``/``Task:``
    marker, else the first non-empty line)."""
    return get_benchmark(env).extract_instruction(observation0.strip())


def clean_state(observation: str, instruction: str, env: str) -> str:
    """An observation with the repeated instruction removed (by ``env``'s benchmark record)."""
    return get_benchmark(env).clean_state(observation.strip(), instruction)


# ---------------------------------------------------------------- rendering

_WS = re.compile(r"[ \t]+")


def _pairs(history: History, instruction: str, env: str) -> list[tuple[str, str]]:
    """(state s_i, action a_i) for i = 0..t-1 (state before the action)."""
    states = [history.observation0, *(s.observation for s in history.steps)][: history.t]
    return [
        (clean_state(st, instruction, env), step.action.strip())
        for st, step in zip(states, history.steps, strict=True)
    ]


def _compose(preamble: str, instruction: str, pairs: list[tuple[str, str]], first_round: int,
             omitted: int, now: str, left: str | None = None) -> str:
    parts = [preamble.strip(), "", "=== INSTRUCTION ===", instruction or "(none)", "",
             "=== HISTORY ==="]
    if omitted:
        parts.append(f"({omitted} earlier rounds omitted)")
    if not pairs and not omitted:
        parts.append("(none)")
    for i, (state, action) in enumerate(pairs):
        r = first_round + i
        parts += [f"Round {r} - STATE:", state, f"Round {r} - ACTION:", action]
    parts += ["", "=== NOW ===", *([left] if left else []), f"[STATE] {now}"]
    return "\n".join(parts)


def render(history: History, options: RenderOptions,
           count_tokens: TokenCounter | None = None) -> str:
    """The value model's input text for ``history`` (see the module docstring for the layout).

    ``count_tokens`` must be given when ``options.max_tokens`` is set; it is the model's own
    tokenizer (without special tokens), so the budget is exact.
    """
    env = options.env
    instruction = extract_instruction(history.observation0, env)
    now = clean_state(history.observation, instruction, env)
    pairs = _pairs(history, instruction, env)
    n_all = len(pairs)
    keep = min(options.history_k, n_all)
    left = (f"[STEPS LEFT] {history.steps_left} of {history.budget}"
            if options.show_budget and history.budget is not None else None)

    def text_with(k: int, instr: str = instruction) -> str:
        return _compose(options.preamble, instr, pairs[n_all - k:] if k else [], n_all - k + 1,
                        n_all - k, now, left)

    if options.max_tokens is None:
        return text_with(keep)
    if count_tokens is None:
        raise ValueError("render: max_tokens is set, so a token counter (tokenizer) is required")
    budget = options.max_tokens
    if count_tokens(text_with(keep)) > budget:
        # Largest k in [0, keep) that fits; the length is monotone in k, so bisect.
        lo, hi = 0, keep - 1
        if count_tokens(text_with(0)) > budget:
            hi = -1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count_tokens(text_with(mid)) <= budget:
                lo = mid
            else:
                hi = mid - 1
        keep = max(hi, 0)
        if hi < 0:  # even without history it is too long: shorten the instruction
            return _shorten_instruction(text_with, instruction, budget, count_tokens)
    return text_with(keep)


def _shorten_instruction(text_with: Callable[..., str], instruction: str, budget: int,
                         count_tokens: TokenCounter) -> str:
    """Cut the instruction (keeping its start) until the text fits; NOW is never touched."""
    words = _WS.sub(" ", instruction).split(" ")
    lo, hi = 0, len(words)
    while lo < hi:  # largest number of words that fits
        mid = (lo + hi + 1) // 2
        if count_tokens(text_with(0, " ".join(words[:mid]) + " ...")) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text_with(0, " ".join(words[:lo]) + " ...")


class Renderer:
    """:func:`render` bound to options and (optionally) a Hugging Face tokenizer for the budget."""

    def __init__(self, options: RenderOptions, tokenizer: object | None = None) -> None:
        self.options = options
        self.tokenizer = tokenizer
        if options.max_tokens is not None and tokenizer is None:
            raise ValueError("render options set max_tokens; pass the model's tokenizer")

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` without special tokens (BOS/CLS are accounted by the model)."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])  # type: ignore[misc,operator]

    def __call__(self, history: History) -> str:
        counter = self.count_tokens if self.tokenizer is not None else None
        return render(history, self.options, counter)
