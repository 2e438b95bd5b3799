"""Scorers: batched == per-state, LRU cache on duplicates; zero-shot / FoA parsers and prompts."""

from __future__ import annotations

import pytest

from amc.envs.synthetic import SyntheticOptions, SyntheticPrior
from amc.registry import VALUES
from amc.types import History, Step, Usage
from amc.value.parse import parse_foa_score, parse_value
from amc.value.scorers import FoAHeuristicValue, LearnedValue, ZeroShotLLMValue

OBS0 = "Crafting commands:\ncraft item 3 using 2 planks\nGoal: craft item 3."
SCENES = ["a bright sunny meadow", "a dark stormy swamp", "a clear open road", "a burning bridge"]


def histories() -> list[History]:
    out = []
    for i, scene in enumerate(SCENES):
        h = History(str(i), OBS0)
        for t in range(i % 3 + 1):
            h = h.extend(Step("r", f"go {t}", f"You are in {scene} ({t}).", 0.0, False))
        out.append(h)
    return [*out, History("9", OBS0)]


@pytest.mark.slow
async def test_batched_scores_equal_per_state_scores(trained) -> None:
    v = LearnedValue.load(str(trained.model_dir), device="cpu", cache_size=0, batch_size=64)
    hs = histories()
    batched = await v.score(hs)
    single = [(await v.score([h]))[0] for h in hs]
    assert batched == pytest.approx(single, abs=1e-5)
    assert len(set(batched)) > 1
    assert v.stats["forward_states"] == 2 * len(hs)
    # Small batches (several forward passes, different padding) agree too.
    v.batch_size = 2
    assert await v.score(hs) == pytest.approx(batched, abs=1e-5)


@pytest.mark.slow
async def test_lru_cache_serves_resampled_duplicates(trained) -> None:
    v = LearnedValue.load(str(trained.model_dir), device="cpu", cache_size=3)
    hs = histories()
    dup = [hs[0], hs[1], hs[0], hs[0], hs[1]]
    vals = await v.score(dup)
    assert v.stats["forward_states"] == 2 and v.stats["cache_hits"] == 3
    assert vals[0] == vals[2] == vals[3] and vals[1] == vals[4]
    await v.score(hs)  # 5 distinct states through a 3-entry cache: the oldest are evicted
    assert len(v._cache) == 3
    again = await v.score(dup)
    assert again == pytest.approx(vals, abs=1e-5)


@pytest.mark.parametrize(("text", "lo", "hi", "expected"), [
    ("0.75", 0, 1, 0.75),
    ("Score: 1", 0, 1, 1.0),
    ("0", 0, 1, 0.0),
    ("-0.5", -1, 1, -0.5),
    ("\u22120.25", -1, 1, -0.25),                   # Unicode minus
    ("I think the score is 0.8.", 0, 1, 0.8),
    ("Step 2 done. Estimated value: 0.3", 0, 1, 0.3),  # keyword beats an earlier number
    ("**0.9**", 0, 1, 0.9),
    ("70%", 0, 1, 0.7),
    ("7/10", 0, 1, 0.7),
    ("8 out of 10", -1, 1, 0.6),
    ("1.7", 0, 1, 1.0),                              # clipped to the range
    ("-3", 0, 1, 0.0),
    ("5e-1", 0, 1, 0.5),
    ("<think>maybe 0.1? no</think>0.6", 0, 1, 0.6),
    ("I cannot tell.", 0, 1, None),
    ("", 0, 1, None),
    ("nan", 0, 1, None),
])
def test_zero_shot_parser(text: str, lo: float, hi: float, expected: float | None) -> None:
    got = parse_value(text, lo, hi)
    assert got == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(("text", "expected"), [
    ("Looks good. Thus the correctness score is 8", 0.8),
    ("the correctness score is 3. On reflection, thus the correctness score is 5.", 0.5),
    ("Rating: 7/10", 0.7),
    ("Thus the correctness score is 12", 1.0),
    ("no verdict", None),
])
def test_foa_parser(text: str, expected: float | None) -> None:
    got = parse_foa_score(text)
    assert got == (None if expected is None else pytest.approx(expected))
    if expected is not None:
        assert parse_foa_score(text, -1, 1) == pytest.approx(-1 + 2 * expected)


class ScriptedLLM:
    """Stand-in for the remote LLM endpoint (the system boundary): canned answers in order."""

    def __init__(self, answers: list[str | Exception]) -> None:
        self.answers, self.prompts = list(answers), []

    async def complete(self, prompt: str) -> tuple[str, Usage]:
        self.prompts.append(prompt)
        a = self.answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a, Usage(prompt_tokens=len(prompt) // 4, completion_tokens=3, calls=1,
                        cost_usd=0.001)

    async def propose(self, history, rng):  # it is a prior too
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


async def test_zero_shot_value_prompts_parses_and_falls_back() -> None:
    llm = ScriptedLLM(["0.9", "Score: -0.4", "no idea", RuntimeError("HTTP 500")])
    value = VALUES.build("zero-shot", {}, env_name="sciworld", env_options=None, beta=1.0,
                         prior=llm)
    assert isinstance(value, ZeroShotLLMValue)
    sw0 = "Task Description:\nYour task is to boil water.\nThis room is a kitchen."
    hs = [History(str(i), sw0, (Step("r", "look", f"room {i}", 0.0, False),)) for i in range(4)]
    with pytest.warns(UserWarning, match="HTTP 500"):
        vals = await value.score(hs)
    assert vals == [0.9, -0.4, 0.0, 0.0]  # sciworld range (-1, 1): fallback = middle = 0
    assert value.parse_failures == 1 and value.call_errors == 1
    assert value.usage.calls == 3 and value.usage.cost_usd == pytest.approx(0.003)
    p = llm.prompts[0]
    assert "between -1 and 1" in p and "Your task is to boil water." in p and "[STATE] room 0" in p
    assert p.rstrip().endswith("Score:")


async def test_llm_value_reports_the_usage_of_each_batch() -> None:
    llm = ScriptedLLM(["0.5", "0.25", RuntimeError("HTTP 503")])
    value = VALUES.build("zero-shot", {}, env_name="textcraft", prior=llm)
    hs = [History(str(i), OBS0, (Step("r", "inventory", "x", 0.0, False),)) for i in range(3)]
    with pytest.warns(UserWarning, match="HTTP 503"):
        vals, usage = await value.score_with_usage(hs)
    assert vals == [0.5, 0.25, 0.5]  # a failed call costs nothing and falls back
    assert usage.calls == 2 and usage.cost_usd == pytest.approx(0.002)
    assert usage.prompt_tokens == sum(len(q) // 4 for q in llm.prompts[:2])


async def test_foa_value_prompt_and_score() -> None:
    llm = ScriptedLLM(["Progress is steady. Thus the correctness score is 7"])
    value = VALUES.build("foa", {"fallback": 0.1}, env_name="textcraft", prior=llm)
    assert isinstance(value, FoAHeuristicValue)
    h = History("1", OBS0, (Step("r", "get 2 planks", "Got 2 planks", 0.0, False),))
    assert await value.score([h]) == [pytest.approx(0.7)]
    p = llm.prompts[0]
    assert "Goal: craft item 3." in p and "Action: get 2 planks\nObservation: Got 2 planks" in p
    assert "Thus the correctness score is N" in p


def test_llm_values_need_a_prior_with_complete() -> None:
    prior = SyntheticPrior(SyntheticOptions())
    for name in ("zero-shot", "foa"):
        with pytest.raises(ValueError, match=r"async complete\(prompt\)"):
            VALUES.build(name, {}, env_name="synthetic", prior=prior)
    with pytest.raises(ValueError, match="low < high"):
        VALUES.build("zero-shot", {"reward_range": [1, 0]}, prior=ScriptedLLM([]))


@pytest.mark.slow
async def test_concurrent_calls_share_one_forward_pass(trained) -> None:
    import asyncio

    v = LearnedValue.load(str(trained.model_dir), device="cpu", cache_size=0)
    hs = histories()
    alone = [await v.score(hs[:2]), await v.score(hs[2:3]), await v.score(hs[3:])]
    calls = v.stats["calls"]
    together = await asyncio.gather(v.score(hs[:2]), v.score(hs[2:3]), v.score(hs[3:]))
    assert v.stats["calls"] == calls + 1  # three tasks' requests, one batched pass
    for a, b in zip(alone, together, strict=True):
        assert b == pytest.approx(a, abs=1e-5)
