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
    [SUMMARY] {what the agent has observed so far, by the benchmark record; ``show_summary``}
    [STATE] {current observation}

Fitting the model's input: at most ``history_k`` most recent (state, action) pairs are kept;
with a tokenizer the text is fitted to a token budget -- ``max_tokens``, or by default the
model's own input length (the tokenizer's ``model_max_length``, which the value model sets to
its ``max_length``, less the special tokens the tokenizer adds). Over budget, the *oldest* pairs
are dropped first, then the preamble; only when the instruction and NOW alone do not fit is the
instruction shortened (keeping its start); NOW is never cut (when it alone is over budget the
text stays too long, and says so). So the model's own left truncation no longer removes the
goal while anything older is left to drop. :func:`fit` says what had to go.

Why the steps left: under a step budget the value of a state is finite-horizon -- the same
inventory is worth more with three steps left than with one -- and the round number alone does
not say how many remain when budgets differ by task (time-aware values: Pardo et al., "Time
Limits in Reinforcement Learning", ICML 2018).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

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
    """Token budget of the whole text, special tokens excluded (None: the model's own input
    length when a tokenizer is given, else no budget); old history is dropped first."""
    preamble: str = DEFAULT_PREAMBLE
    """Fixed text that opens every rendering."""
    show_budget: bool = False
    """Show ``[STEPS LEFT] k of T`` in NOW when the history carries its step budget."""
    show_summary: bool = True
    """Show ``[SUMMARY] ...`` in NOW: the benchmark record's summary of what the agent has
    observed (:attr:`~amc.envs.benchmark.Benchmark.observed_summary`; none: no line). Stored
    render options that predate it read as False (:meth:`stored`), so old models see what
    they were trained on."""

    @classmethod
    def stored(cls, data: dict[str, Any]) -> RenderOptions:
        """Options saved with a dataset or model; those written before ``show_summary``
        existed rendered without a summary."""
        return cls.model_validate({"show_summary": False, **data})


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
             omitted: int, now: list[str]) -> str:
    head = [preamble.strip(), ""] if preamble.strip() else []
    parts = [*head, "=== INSTRUCTION ===", instruction or "(none)", "", "=== HISTORY ==="]
    if omitted:
        parts.append(f"({omitted} earlier rounds omitted)")
    if not pairs and not omitted:
        parts.append("(none)")
    for i, (state, action) in enumerate(pairs):
        r = first_round + i
        parts += [f"Round {r} - STATE:", state, f"Round {r} - ACTION:", action]
    parts += ["", "=== NOW ===", *now]
    return "\n".join(parts)


def observed_summary(history: History, env: str) -> str | None:
    """The benchmark record's summary of what ``history`` has observed (None: it has none)."""
    summarise = get_benchmark(env).observed_summary
    return summarise(history) if summarise is not None else None


class Fitted(NamedTuple):
    """A rendering and what had to go to fit the budget."""

    text: str
    dropped_rounds: int = 0
    """(state, action) pairs dropped for the budget (beyond those ``history_k`` leaves out)."""
    preamble_dropped: bool = False
    instruction_shortened: bool = False
    over_budget: bool = False
    """NOW alone exceeds the budget: kept whole, so the text is still too long."""


def fit(history: History, options: RenderOptions, count_tokens: TokenCounter | None = None,
        budget: int | None = None) -> Fitted:
    """:func:`render` and what fitting ``budget`` tokens (default ``options.max_tokens``;
    None: no budget) took away: oldest history first, then the preamble, then the end of the
    instruction; NOW is never cut."""
    env = options.env
    instruction = extract_instruction(history.observation0, env)
    pairs = _pairs(history, instruction, env)
    n_all = len(pairs)
    keep = min(options.history_k, n_all)
    now = _now_lines(history, options, instruction)
    budget = options.max_tokens if budget is None else budget

    def text_with(k: int, pre: str = options.preamble, instr: str = instruction,
                  now_: list[str] = now) -> str:
        return _compose(pre, instr, pairs[n_all - k:] if k else [], n_all - k + 1, n_all - k,
                        now_)

    if budget is None:
        return Fitted(text_with(keep))
    if count_tokens is None:
        raise ValueError("render: max_tokens is set, so a token counter (tokenizer) is required")
    if count_tokens(text_with(keep)) <= budget:
        return Fitted(text_with(keep))
    if count_tokens(text_with(0)) <= budget:  # the largest k in [0, keep) that fits (monotone)
        k = _largest(0, keep - 1, lambda m: count_tokens(text_with(m)) <= budget)
        return Fitted(text_with(k), keep - k)
    if count_tokens(text_with(0, "")) <= budget:
        return Fitted(text_with(0, ""), keep, preamble_dropped=True)
    words = _WS.sub(" ", instruction).split(" ")
    if count_tokens(text_with(0, "", "...")) <= budget:
        n = _largest(0, len(words) - 1,
                     lambda m: count_tokens(text_with(0, "", _cut(words, m))) <= budget)
        return Fitted(text_with(0, "", _cut(words, n)), keep, True, True)
    # NOW alone is over budget: it is still kept whole (the model's left truncation then cuts
    # the text's start); counted, so a dataset card shows how often it happens.
    return Fitted(text_with(0, "", "..."), keep, True, True, True)


def _now_lines(history: History, options: RenderOptions, instruction: str) -> list[str]:
    env = options.env
    lines = []
    if options.show_budget and history.budget is not None:
        lines.append(f"[STEPS LEFT] {history.steps_left} of {history.budget}")
    if options.show_summary and (summary := observed_summary(history, env)):
        lines.append(f"[SUMMARY] {summary}")
    lines.append(f"[STATE] {clean_state(history.observation, instruction, env)}")
    return lines


def _largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int:
    """The largest m in [lo, hi] with ok(m), ok monotone decreasing (lo if none but lo)."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cut(words: list[str], n: int) -> str:
    return " ".join(words[:n]) + " ..." if n < len(words) else " ".join(words)


def render(history: History, options: RenderOptions,
           count_tokens: TokenCounter | None = None) -> str:
    """The value model's input text for ``history`` (see the module docstring for the layout).

    ``count_tokens`` must be given when ``options.max_tokens`` is set; it is the model's own
    tokenizer (without special tokens), so the budget is exact.
    """
    return fit(history, options, count_tokens).text


def model_budget(tokenizer: Any) -> int | None:
    """Tokens a rendering may use in the model's input: the tokenizer's ``model_max_length``
    less the special tokens it adds to one sequence (None: the tokenizer states no limit)."""
    limit = getattr(tokenizer, "model_max_length", None)
    if not isinstance(limit, int) or limit <= 0 or limit > 1_000_000:  # HF's "no limit" sentinel
        return None
    specials = tokenizer.num_special_tokens_to_add(pair=False)
    return int(limit - specials)


class Renderer:
    """:func:`fit` bound to options and (optionally) a Hugging Face tokenizer for the budget:
    ``options.max_tokens``, else the tokenizer's own (:func:`model_budget`)."""

    def __init__(self, options: RenderOptions, tokenizer: object | None = None) -> None:
        self.options = options
        self.tokenizer = tokenizer
        if options.max_tokens is not None and tokenizer is None:
            raise ValueError("render options set max_tokens; pass the model's tokenizer")
        self.budget = options.max_tokens if options.max_tokens is not None else (
            model_budget(tokenizer) if tokenizer is not None else None)

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` without special tokens (BOS/CLS are accounted by the budget)."""
        ids = self.tokenizer(text, add_special_tokens=False, verbose=False)  # type: ignore[misc,operator]
        return len(ids["input_ids"])

    def fit(self, history: History) -> Fitted:
        """The rendering and what fitting the budget took away."""
        counter = self.count_tokens if self.tokenizer is not None else None
        return fit(history, self.options, counter, self.budget)

    def __call__(self, history: History) -> str:
        return self.fit(history).text
