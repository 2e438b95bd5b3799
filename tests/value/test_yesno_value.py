"""`zero-shot-yesno`: P(Yes) from the prior's next-token log-probabilities, over real HTTP."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from amc.cli import app
from amc.envs.synthetic import SyntheticOptions, SyntheticPrior
from amc.priors.openai import OpenAIOptions, OpenAIPrior
from amc.registry import VALUES
from amc.results import read_jsonl, results_path
from amc.types import History, Step
from amc.value.yesno import answer_probability
from tests.priors.loopback import LoopbackServer

OBS0 = "Crafting commands:\ncraft 1 stick using 2 oak planks\n\nGoal: craft stick."
HOPEFUL = History("t", OBS0, (Step("get 2 oak planks", "get 2 oak planks", "Got 2 oak planks",
                                   0.0, False),))
LOST = History("t", OBS0, (Step("get 1 ink sac", "get 1 ink sac", "Got 1 ink sac", 0.0, False),))


def believer(prompt: str) -> dict[str, float]:
    """A model that believes in planks: P(Yes) .8 vs .1 No (else .3 vs .6), split over forms."""
    yes, no = (0.8, 0.1) if "Got 2 oak planks" in prompt else (0.3, 0.6)
    return {" Yes": math.log(yes * 0.75), "Yes": math.log(yes * 0.25), " No": math.log(no),
            " Maybe": math.log(0.05)}


def build(srv: LoopbackServer, endpoint: str = "completions", **options: object):
    prior = OpenAIPrior(OpenAIOptions(base_url=srv.url, model="toy", endpoint=endpoint,
                                      cache=False), env="textcraft")
    value = VALUES.build("zero-shot-yesno", options, env_name="textcraft", env_options=None,
                         beta=1.0, prior=prior)
    return prior, value


def test_answer_probability_sums_the_forms_of_each_answer():
    top = {" Yes": math.log(0.3), "Yes": math.log(0.1), " yes": math.log(0.1),
           " No": math.log(0.25), "NO": math.log(0.25), " Maybe": math.log(0.2)}
    assert answer_probability(top) == pytest.approx(0.5 / (0.5 + 0.5))
    assert answer_probability({" Yes": math.log(0.6), " No": math.log(0.2)}) == pytest.approx(0.75)
    assert answer_probability({" Maybe": 0.0}) is None


@pytest.mark.parametrize("shape,endpoint", [("legacy", "completions"),
                                            ("content", "completions"), ("content", "chat")])
async def test_the_score_is_p_yes_over_yes_and_no_in_every_answer_shape(shape, endpoint):
    with LoopbackServer(next_tokens=believer, logprobs_shape=shape) as srv:
        prior, value = build(srv, endpoint)
        scores, usage = await value.score_with_usage([HOPEFUL, LOST, HOPEFUL])
        await prior.aclose()
    assert scores[0] == pytest.approx(0.8 / 0.9) and scores[1] == pytest.approx(0.3 / 0.9)
    assert scores[0] > scores[1]  # a value that swapped yes and no would rank them the other way
    assert scores[2] == scores[0]
    # the repeated state is asked once; the calls are billed (ReportsUsage) and in the ledger
    assert srv.counts["logprobs"] == 2 and usage.calls == 2 and usage.prompt_tokens > 0
    assert prior.ledger.run.calls == 2 and value.stats["calls"] == 2


async def test_the_prompt_ends_in_the_question_and_the_range_maps_p():
    seen: list[str] = []

    def record(prompt: str) -> dict[str, float]:
        seen.append(prompt)
        return {" Yes": math.log(0.25), " No": math.log(0.75)}

    with LoopbackServer(next_tokens=record) as srv:
        prior, value = build(srv, reward_range=(-1.0, 1.0), question="Is the goal near?")
        assert await value.score([LOST]) == [pytest.approx(-1.0 + 0.25 * 2.0)]
        await prior.aclose()
    assert seen[0].endswith("Question: Is the goal near? Answer Yes or No.\nAnswer:")
    assert "INSTRUCTION ===\ncraft stick." in seen[0] and "Got 1 ink sac" in seen[0]


async def test_no_answer_among_the_candidates_or_no_logprobs_falls_back_and_is_counted():
    with LoopbackServer(next_tokens=lambda p: {" Maybe": -0.1, "\n": -2.0}) as srv:
        prior, value = build(srv, fallback=0.25)
        assert await value.score([HOPEFUL]) == [0.25] and value.stats["undecided"] == 1
        await prior.aclose()
    with LoopbackServer(next_tokens=None) as srv:  # a server that ignores logprobs
        prior, value = build(srv)
        with pytest.raises(RuntimeError, match="without next-token log-probabilities"):
            await prior.next_token_logprobs("Answer:")
        with pytest.warns(UserWarning, match="fallback 0.5"):
            assert await value.score([HOPEFUL]) == [0.5]
        assert value.stats["call_errors"] == 1
        await prior.aclose()


def test_a_prior_without_logprobs_is_a_clear_error():
    prior = SyntheticPrior(SyntheticOptions())
    with pytest.raises(ValueError, match=r"next_token_logprobs.*SyntheticPrior"):
        VALUES.build("zero-shot-yesno", {}, env_name="synthetic", env_options=None, beta=1.0,
                     prior=prior)
    with pytest.raises(ValueError, match="top"):
        VALUES.validate("zero-shot-yesno", {"top": 21})


def test_a_run_with_the_value_bills_its_calls_and_ranks_particles(tmp_path):
    """`amc run` smc@4 with zero-shot-yesno through the openai prior on a loopback server:
    every request the server saw (proposals and value calls) is in the tasks' usage."""
    with LoopbackServer() as srv:
        r = CliRunner().invoke(app, [
            "run", "--env", "synthetic", "--prior", "openai", "--model", "toy",
            "-S", f"prior.options.base_url={srv.url}", "-S", "prior.options.prompt=menu",
            "-S", "prior.options.endpoint=completions", "-S", "prior.options.cache=false",
            "--value", "zero-shot-yesno", "-m", "smc@4", "--steps", "3",
            "--resample-steps", "1,2", "--max-tasks", "3", "--quiet", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    results = list(read_jsonl(results_path(tmp_path, "smc@4", 0)))
    assert len(results) == 3 and srv.counts["logprobs"] > 0
    assert sum(x["usage"]["calls"] for x in results) == srv.counts["requests"]
    row = json.loads((tmp_path / "summary.json").read_text())["methods"][0]
    assert row["value_groups"] > 0 and row["value_constant_share"] < 0.9 and not row["warnings"]
