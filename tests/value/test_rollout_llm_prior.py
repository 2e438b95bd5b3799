"""The rollout value with the run's own LLM prior (issue 49 item 4a): ``smc@N+rollout`` with an
OpenAI-compatible prior runs, and every prior call its rollouts make is billed to the task."""

from __future__ import annotations

from typer.testing import CliRunner

from amc.cli import app
from amc.envs.synthetic import SyntheticOptions, SyntheticSuite
from amc.priors.openai import OpenAIOptions, OpenAIPrior
from amc.registry import VALUES
from amc.results import read_jsonl, results_path
from amc.types import History
from tests.priors.loopback import LoopbackServer

N, STEPS = 4, 3


def test_smc_with_the_rollout_value_bills_every_rollout_call_to_its_task(tmp_path):
    with LoopbackServer() as srv:
        r = CliRunner().invoke(app, [
            "run", "--env", "synthetic", "--prior", "openai", "--model", "toy",
            "-S", f"prior.options.base_url={srv.url}", "-S", "prior.options.prompt=menu",
            "-S", "prior.options.endpoint=completions", "-S", "prior.options.cache=false",
            "-S", "values.rollout.name=rollout", "-S", f"values.rollout.options.max_steps={STEPS}",
            "-S", "values.rollout.options.n_rollouts=2", "-m", f"smc@{N}+rollout,bon@{N}",
            "--steps", str(STEPS), "--resample-steps", "1,2", "--max-tasks", "3", "--quiet",
            "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    smc = list(read_jsonl(results_path(tmp_path, f"smc@{N}+rollout", 0)))
    bon = list(read_jsonl(results_path(tmp_path, f"bon@{N}", 0)))
    assert len(smc) == len(bon) == 3
    # every request the server answered -- proposals and rollouts -- is in some task's usage
    assert sum(x["usage"]["calls"] for x in smc + bon) == srv.counts["requests"]
    # Best-of-N's calls are its proposals exactly; SMC's are its proposals plus the rollouts'
    assert all(x["usage"]["calls"] == proposals(x) for x in bon)
    rollouts = [x["usage"]["calls"] - proposals(x) for x in smc]
    assert all(k >= 0 for k in rollouts) and sum(rollouts) >= 2 * N  # 2 rollouts per particle


def proposals(record: dict) -> int:
    """The prior calls of the particles: one per particle alive at the start of each step."""
    live = [N] + [s["n_live"] for s in record["steps"]]
    return sum(live[:len(record["steps"])])


async def test_the_rollout_value_reports_the_llm_calls_it_made():
    with LoopbackServer() as srv:
        prior = OpenAIPrior(OpenAIOptions(base_url=srv.url, model="toy", prompt="menu",
                                          endpoint="completions", cache=False), env="synthetic")
        value = VALUES.build("rollout", {"max_steps": STEPS, "n_rollouts": 3},
                             env_name="synthetic", env_options=SyntheticOptions(), beta=1.0,
                             prior=prior)
        env = SyntheticSuite(SyntheticOptions()).make()
        root = History("0", env.reset("0"))
        (v,), usage = await value.score_with_usage([root])
        seen = srv.counts["requests"]
        assert usage.calls == seen and 3 <= seen <= 3 * STEPS and usage.prompt_tokens > 0
        assert prior.ledger.run.calls == seen
        assert (await value.score_with_usage([root]))[0] == [v]  # f of the state: cached
        await value.aclose()
        await prior.aclose()
