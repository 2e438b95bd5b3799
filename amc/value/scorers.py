"""Value functions for the SMC driver: the learned value model and two LLM-prompted baselines.

- ``learned`` (:class:`LearnedValue`): a trained value model loaded from the MLflow registry
  (``models:/amc-value-textcraft@champion``), a run, or a local directory. All particle states
  of a call are rendered with the model's own training-time :class:`RenderOptions`, de-duplicated,
  looked up in an LRU cache (resampled particles repeat states), and the rest scored in one
  length-sorted, dynamically padded forward pass per ``batch_size`` under
  ``torch.inference_mode`` -- in a worker thread, so the event loop keeps stepping particles.
- ``zero-shot`` (:class:`ZeroShotLLMValue`): asks an LLM for a number in the reward range.
- ``foa`` (:class:`FoAHeuristicValue`): a Fleet-of-Agents style critique prompt ending in
  "Thus the correctness score is N" (N in 1..10), mapped linearly onto the reward range.

The LLM baselines call the run's prior (the factory receives ``prior=``), so they share its
client, retries and cost ledger. The prior must offer ``async complete(prompt) -> (text, Usage)``
(:class:`~amc.protocols.CompletionClient`); otherwise building the value fails with a clear
error. Parsers are in :mod:`amc.value.parse`.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Literal

import torch
from pydantic import Field

from amc.config import Frozen
from amc.envs.benchmarks import benchmark_in
from amc.protocols import CompletionClient, ReportsUsage
from amc.registry import VALUES
from amc.types import History, Usage
from amc.value.parse import parse_foa_score, parse_value
from amc.value.render import Renderer, RenderOptions, render, render_env_for

# ---------------------------------------------------------------- learned value


class LearnedValueOptions(Frozen):
    """Options of the learned value function."""

    model: str
    """Model URI (models:/amc-value-<env>@champion, models:/<id>, runs:/...) or local path."""
    tracking_uri: str | None = None
    """MLflow tracking URI for models:/ URIs (None: $MLFLOW_TRACKING_URI or the sqlite default)."""
    batch_size: int = Field(64, ge=1)
    """States per forward pass."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Where to run the model (auto = cuda when available)."""
    cache_size: int = Field(4096, ge=0)
    """LRU cache entries (rendered state -> value); 0 disables the cache."""
    render: dict[str, Any] | None = None
    """Overrides of the model's training-time render options (changes what the model sees!)."""
    temperature: Literal["fitted", "none"] = "fitted"
    """fitted: a model that stores a resampling temperature T fitted on validation
    (:mod:`amc.value.temperature`) has its values scaled by beta / T, so the resampling
    weights go as exp(V / T) instead of exp(V / beta) (the target is unchanged: the weights
    telescope to the reward / beta); none: the values as trained. Models without a stored T
    are never scaled."""


class LearnedValue:
    """f_theta(s) from a trained value model, batched over all particle states of a call."""

    def __init__(self, model: Any, tokenizer: Any, render_options: RenderOptions,
                 batch_size: int = 64, device: str | torch.device = "cpu",
                 cache_size: int = 4096) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.renderer = Renderer(render_options, tokenizer)
        self.batch_size, self.device, self.cache_size = batch_size, torch.device(device), cache_size
        self._cache: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()  # one forward pass at a time; guards the cache
        self._pending: list[tuple[list[History], asyncio.Future[list[float]]]] = []
        self._worker: asyncio.Task[None] | None = None
        self.stats = {"states": 0, "cache_hits": 0, "forward_states": 0, "calls": 0}
        self.meta: dict[str, Any] = {}
        self.scale = 1.0  # beta / T with a fitted resampling temperature (make_learned_value)

    @classmethod
    def load(cls, uri: str, *, tracking_uri: str | None = None, batch_size: int = 64,
             device: str = "auto", cache_size: int = 4096,
             render_overrides: dict[str, Any] | None = None) -> LearnedValue:
        """Load from a registry/run URI or a local model directory."""
        from amc.value.model import load_model
        from amc.value.registry import resolve_model_dir

        dev = "cuda" if device == "auto" and torch.cuda.is_available() else (
            "cpu" if device == "auto" else device)
        model, tok, meta = load_model(resolve_model_dir(uri, tracking_uri), dev)
        opts = RenderOptions.stored({**meta["render"], **(render_overrides or {})})
        value = cls(model, tok, opts, batch_size, dev, cache_size)
        value.meta = meta
        return value

    def render(self, history: History) -> str:
        """The model's input text for ``history`` (the training-time renderer)."""
        return self.renderer(history)

    def score_texts(self, texts: Sequence[str]) -> list[float]:
        """Values of rendered states: cache, de-duplicate, one batched pass for the rest."""
        with self._lock:
            return self._score_texts(texts)

    def _score_texts(self, texts: Sequence[str]) -> list[float]:
        from amc.value.model import predict_texts

        self.stats["calls"] += 1
        self.stats["states"] += len(texts)
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        self.stats["cache_hits"] += len(texts) - len(todo)
        fresh = dict(zip(todo, predict_texts(self.model, self.tokenizer, todo, self.batch_size,
                                             self.device), strict=True))
        self.stats["forward_states"] += len(todo)
        out = [(fresh[t] if t in fresh else self._cache[t]) * self.scale for t in texts]
        if self.cache_size:
            for t in texts:  # refresh recency, insert new ones, evict the oldest
                self._cache[t] = fresh.get(t, self._cache.get(t, 0.0))
                self._cache.move_to_end(t)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return out

    def clear_cache(self) -> None:
        self._cache.clear()

    def score_histories(self, histories: Sequence[History]) -> list[float]:
        """Synchronous :meth:`score` (render + batched forward)."""
        return self.score_texts([self.render(h) for h in histories])

    async def score(self, histories: Sequence[History]) -> list[float]:
        """Values of ``histories``; calls that arrive while a pass runs share the next pass.

        Concurrent tasks' requests are coalesced: one drain task takes everything queued, renders
        and scores it in a worker thread (one batched forward), and hands each caller its slice.
        """
        fut: asyncio.Future[list[float]] = asyncio.get_running_loop().create_future()
        self._pending.append((list(histories), fut))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await fut

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            flat = [h for hs, _ in batch for h in hs]
            try:
                values = await asyncio.to_thread(self.score_histories, flat)
            except Exception as err:  # every waiting caller sees the failure
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(err)
                continue
            i = 0
            for hs, fut in batch:
                if not fut.done():
                    fut.set_result(values[i:i + len(hs)])
                i += len(hs)

    async def aclose(self) -> None:
        self._cache.clear()


@VALUES.register("learned", options=LearnedValueOptions)
def make_learned_value(options: LearnedValueOptions, *, env_name: str | None = None,
                       beta: float | None = None, **_: object) -> LearnedValue:
    """A trained value model from the MLflow registry or a local directory (scaled by
    beta / T when it stores a fitted temperature T and ``options.temperature`` is fitted)."""
    value = LearnedValue.load(options.model, tracking_uri=options.tracking_uri,
                              batch_size=options.batch_size, device=options.device,
                              cache_size=options.cache_size, render_overrides=options.render)
    t = (value.meta.get("metrics") or {}).get("resample_temperature")
    if options.temperature == "fitted" and t is not None and beta is not None:
        value.scale = float(beta) / float(t)
    trained_env = value.meta.get("env")
    if env_name and trained_env and render_env_for(env_name) != render_env_for(trained_env):
        warnings.warn(f"value model trained on {trained_env!r} is used on {env_name!r}",
                      stacklevel=2)
    return value


# ---------------------------------------------------------------- LLM-prompted baselines


class LLMValueOptions(Frozen):
    """Options of the zero-shot and FoA value baselines."""

    reward_range: tuple[float, float] | None = None
    """(low, high) of the future reward (None: the benchmark record's, e.g. (-1, 1) on sciworld)."""
    history_k: int = Field(20, ge=0)
    """Most recent (state, action) pairs shown in the prompt."""
    max_concurrency: int = Field(16, ge=1)
    """LLM calls in flight at once for one score() call."""
    fallback: float | None = None
    """Value when the answer has no number or the call fails (None: middle of the range)."""


ZERO_SHOT_PREAMBLE = (
    "You judge how well a text-based agent is doing. Read the task instruction, the recent "
    "history and the current state."
)
ZERO_SHOT_QUESTION = (
    "How much reward will the agent still collect from the current state until the end of the "
    "episode? Rewards lie between {lo:g} and {hi:g}. Answer with a single number between {lo:g} "
    "and {hi:g} and nothing else.\n\nScore:"
)
FOA_PROMPT = (
    "You evaluate a text-based agent's trajectory. Decide whether its actions are making "
    "progress towards the goal and whether the latest state makes success likely.\n\n"
    "Goal: {goal}\n\nTrajectory:\n{trajectory}\n\n"
    "Write a short reflection (at most three sentences), then finish with exactly "
    "\"Thus the correctness score is N\", where N is an integer from 1 (hopeless) to 10 "
    "(certain success).\n\nReflection:"
)


def default_reward_range(env_name: str | None) -> tuple[float, float]:
    """The reward range of the benchmark ``env_name`` names (e.g. SciWorld's failure scores
    -1: (-1, 1)); (0, 1) for the generic record."""
    return benchmark_in(env_name).reward_range


class _LLMValue(ReportsUsage):
    """Shared machinery: prompt per history, concurrent calls, parse, fallback, ledger."""

    def __init__(self, client: CompletionClient, env_name: str | None,
                 options: LLMValueOptions) -> None:
        self.client = client
        self.lo, self.hi = options.reward_range or default_reward_range(env_name)
        if self.hi <= self.lo:
            raise ValueError(f"reward_range must be (low, high) with low < high, got "
                             f"{(self.lo, self.hi)}")
        mid = (self.lo + self.hi) / 2
        self.fallback = options.fallback if options.fallback is not None else mid
        self.render_options = RenderOptions(env=render_env_for(env_name),
                                            history_k=options.history_k,
                                            preamble=ZERO_SHOT_PREAMBLE)
        self._sem = asyncio.Semaphore(options.max_concurrency)
        self.usage = Usage()
        self.parse_failures = 0
        self.call_errors = 0

    def prompt(self, history: History) -> str:
        raise NotImplementedError

    def parse(self, text: str) -> float | None:
        raise NotImplementedError

    async def _one(self, history: History) -> tuple[float, Usage]:
        async with self._sem:
            try:
                text, usage = await self.client.complete(self.prompt(history))
            except Exception as err:  # a failed call must not abort the run: documented fallback
                self.call_errors += 1
                warnings.warn(f"value LLM call failed ({type(err).__name__}: {err}); "
                              f"using fallback {self.fallback}", stacklevel=2)
                return self.fallback, Usage()
        self.usage = self.usage + usage
        value = self.parse(text)
        if value is None:
            self.parse_failures += 1
            return self.fallback, usage
        return value, usage

    async def score_with_usage(self, histories: Sequence[History]
                               ) -> tuple[list[float], Usage]:
        """Values and the tokens/dollars their calls cost (the driver bills them to the task)."""
        pairs = await asyncio.gather(*(self._one(h) for h in histories))
        return [v for v, _ in pairs], sum((u for _, u in pairs), Usage())

    async def score(self, histories: Sequence[History]) -> list[float]:
        return (await self.score_with_usage(histories))[0]

    async def aclose(self) -> None:
        pass  # the client belongs to the prior, which the driver closes


class ZeroShotLLMValue(_LLMValue):
    """Zero-shot LLM value: "how much reward is still to come?", answered with one number."""

    def prompt(self, history: History) -> str:
        return render(history, self.render_options) + "\n\n" + ZERO_SHOT_QUESTION.format(
            lo=self.lo, hi=self.hi)

    def parse(self, text: str) -> float | None:
        return parse_value(text, self.lo, self.hi)


class FoAHeuristicValue(_LLMValue):
    """FoA-style heuristic value: critique the trajectory, then a 1-10 correctness score."""

    def prompt(self, history: History) -> str:
        from amc.value.render import clean_state, extract_instruction

        env = self.render_options.env
        goal = extract_instruction(history.observation0, env)
        lines = [f"Observation: {clean_state(history.observation0, goal, env)}"]
        k = self.render_options.history_k
        steps = history.steps[-k:] if k else ()
        if len(steps) < len(history.steps):
            lines.append(f"({len(history.steps) - len(steps)} earlier steps omitted)")
        for s in steps:
            lines += [f"Action: {s.action}",
                      f"Observation: {clean_state(s.observation, goal, env)}"]
        return FOA_PROMPT.format(goal=goal, trajectory="\n".join(lines))

    def parse(self, text: str) -> float | None:
        return parse_foa_score(text, self.lo, self.hi)


def _client_of(prior: object, name: str) -> CompletionClient:
    if prior is None or not isinstance(prior, CompletionClient):
        raise ValueError(
            f"value {name!r} calls the LLM through the run's prior, which must offer "
            f"async complete(prompt) -> (text, Usage); prior {type(prior).__name__} does not "
            f"(use an LLM prior such as 'openai')")
    return prior


@VALUES.register("zero-shot", options=LLMValueOptions)
def make_zero_shot_value(options: LLMValueOptions, *, env_name: str | None = None,
                         prior: object = None, **_: object) -> ZeroShotLLMValue:
    """Zero-shot LLM value through the prior's client (a number in the reward range)."""
    return ZeroShotLLMValue(_client_of(prior, "zero-shot"), env_name, options)


@VALUES.register("foa", options=LLMValueOptions)
def make_foa_value(options: LLMValueOptions, *, env_name: str | None = None,
                   prior: object = None, **_: object) -> FoAHeuristicValue:
    """FoA-style heuristic value prompt (1-10 correctness score) through the prior's client."""
    return FoAHeuristicValue(_client_of(prior, "foa"), env_name, options)
