"""``zero-shot-yesno``: a zero-shot value read from a base model's belief, not from its text.

Asked for a number (value ``zero-shot``), the embedded Gemma-3-270M -- a base completion model
-- answered 1.0 for every state of a run: the value was a constant and SMC with it uniform
resampling. This value asks a yes/no question at the end of the rendered state instead::

    <preamble, task, recent history, current state>

    Question: Will the agent complete the task? Answer Yes or No.
    Answer:

and reads the probability of the answer from the next token's log-probabilities
(:class:`~amc.protocols.NextTokenLogprobs`, the completion endpoint's ``logprobs``):

    p = P(yes) / (P(yes) + P(no)),   f(s) = low + p * (high - low)

where P(yes) sums the probabilities of every candidate that reads ``yes`` once stripped and
lower-cased (`` Yes``, ``Yes``, `` yes``...), P(no) likewise. Even a model that would always
*write* "Yes" gives each state its own p, so the value ranks states. When neither answer is
among the candidates (or the call fails) the value is ``fallback`` and counted
(``undecided``, ``call_errors``).

States repeated within one call (resampled particles share them) are asked once. The calls go
through the run's prior (same server, retries, response cache and ledger) and their tokens are
billed to the task (:class:`~amc.protocols.ReportsUsage`). The prior must declare
:class:`~amc.protocols.NextTokenLogprobs`; otherwise building the value is a clear error.
"""

from __future__ import annotations

import asyncio
import math
import warnings
from collections.abc import Mapping, Sequence

from pydantic import Field

from amc.config import Frozen
from amc.protocols import NextTokenLogprobs, ReportsUsage
from amc.registry import VALUES
from amc.types import History, Usage
from amc.value.render import RenderOptions, render, render_env_for
from amc.value.scorers import ZERO_SHOT_PREAMBLE, default_reward_range


class YesNoValueOptions(Frozen):
    """Options of the yes/no zero-shot value."""

    question: str = "Will the agent complete the task?"
    """The yes/no question asked after the state (the prompt then says: Answer Yes or No.)."""
    top: int = Field(20, ge=1, le=20)
    """Next-token candidates the endpoint returns (the OpenAI API's most is 20)."""
    reward_range: tuple[float, float] | None = None
    """(low, high) the probability is mapped onto (None: the benchmark record's range)."""
    history_k: int = Field(20, ge=0)
    """Most recent (state, action) pairs shown in the prompt."""
    max_concurrency: int = Field(16, ge=1)
    """Calls in flight at once for one score() call."""
    fallback: float | None = None
    """Value when neither answer is a candidate or the call fails (None: middle of the range)."""


def answer_probability(top: Mapping[str, float]) -> float | None:
    """P(yes) / (P(yes) + P(no)) over candidate tokens ``{text: logprob}``; None if neither."""
    mass = {"yes": 0.0, "no": 0.0}
    for token, logprob in top.items():
        word = token.strip().lower()
        if word in mass:
            mass[word] += math.exp(logprob)
    total = mass["yes"] + mass["no"]
    return mass["yes"] / total if total > 0 else None


class YesNoValue(ReportsUsage):
    """f(s) from the probability a base model gives ``Yes`` (see the module docstring)."""

    def __init__(self, client: NextTokenLogprobs, env_name: str | None,
                 options: YesNoValueOptions) -> None:
        self.client, self.options = client, options
        self.lo, self.hi = options.reward_range or default_reward_range(env_name)
        if self.hi <= self.lo:
            raise ValueError(f"reward_range must be (low, high) with low < high, got "
                             f"{(self.lo, self.hi)}")
        self.fallback = options.fallback if options.fallback is not None else (
            self.lo + self.hi) / 2
        if not self.lo <= self.fallback <= self.hi:  # else an undecided state outranks all
            raise ValueError(f"fallback {self.fallback} lies outside the reward range "
                             f"{(self.lo, self.hi)}")
        self.render_options = RenderOptions(env=render_env_for(env_name),
                                            history_k=options.history_k,
                                            preamble=ZERO_SHOT_PREAMBLE)
        self._sem = asyncio.Semaphore(options.max_concurrency)
        self.usage = Usage()
        self.stats = {"states": 0, "calls": 0, "undecided": 0, "call_errors": 0}

    def prompt(self, history: History) -> str:
        """The rendered state, then the question and ``Answer:`` (the next token answers)."""
        return (render(history, self.render_options) + f"\n\nQuestion: {self.options.question}"
                " Answer Yes or No.\nAnswer:")

    async def _one(self, prompt: str) -> tuple[float, Usage]:
        async with self._sem:
            try:
                top, usage = await self.client.next_token_logprobs(prompt, top=self.options.top)
            except Exception as err:  # a failed call must not abort the run: documented fallback
                self.stats["call_errors"] += 1
                warnings.warn(f"value LLM call failed ({type(err).__name__}: {err}); "
                              f"using fallback {self.fallback}", stacklevel=2)
                return self.fallback, Usage()
        self.stats["calls"] += 1
        p = answer_probability(top)
        if p is None:
            self.stats["undecided"] += 1
            return self.fallback, usage
        return self.lo + p * (self.hi - self.lo), usage

    async def score_with_usage(self, histories: Sequence[History]
                               ) -> tuple[list[float], Usage]:
        """Values and what their calls cost (one call per distinct state)."""
        prompts = [self.prompt(h) for h in histories]
        distinct = list(dict.fromkeys(prompts))
        pairs = await asyncio.gather(*(self._one(p) for p in distinct))
        usage = sum((u for _, u in pairs), Usage())
        self.stats["states"] += len(histories)
        self.usage = self.usage + usage
        value = {p: v for p, (v, _) in zip(distinct, pairs, strict=True)}
        return [value[p] for p in prompts], usage

    async def score(self, histories: Sequence[History]) -> list[float]:
        return (await self.score_with_usage(histories))[0]

    async def aclose(self) -> None:
        pass  # the client belongs to the prior, which the driver closes


def logprobs_client(prior: object, name: str) -> NextTokenLogprobs:
    """The prior as a :class:`~amc.protocols.NextTokenLogprobs`, or a clear error."""
    if prior is None or not isinstance(prior, NextTokenLogprobs):
        raise ValueError(
            f"value {name!r} reads next-token log-probabilities through the run's prior, which "
            f"must offer async next_token_logprobs(prompt, top=) -> ({{token: logprob}}, Usage); "
            f"prior {type(prior).__name__} does not (use 'embedded', 'openai' or 'hf')")
    return prior


@VALUES.register("zero-shot-yesno", options=YesNoValueOptions)
def make_yesno_value(options: YesNoValueOptions, *, env_name: str | None = None,
                     prior: object = None, **_: object) -> YesNoValue:
    """Zero-shot value: P(Yes) of a yes/no question from the prior's next-token logprobs."""
    return YesNoValue(logprobs_client(prior, "zero-shot-yesno"), env_name, options)
