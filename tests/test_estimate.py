"""Dry-run estimates: exact call counts, priced tokens, no key and no model needed."""

from typer.testing import CliRunner

from amc.cli import app
from amc.config import load_run_config
from amc.estimate import estimate


def _cfg(*extra):
    return load_run_config(None, ["env.name=synthetic", "prior.name=openai",
                                  "prior.options.model=gpt-4.1-mini", "max_tasks=5",
                                  "smc.max_steps=3", "smc.resample_steps=[1, 2]",
                                  "seeds=[0, 1]", "values.zs.name=zero-shot",
                                  "methods=[react, bon@4, smc@8+zs]", *extra])


def test_call_counts_are_exact_upper_bounds(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rows = {r.method: r for r in estimate(_cfg())}
    assert rows["react"].policy_calls == 1 * 3 * 5 * 2
    assert rows["bon@4"].policy_calls == 4 * 3 * 5 * 2 and rows["bon@4"].value_calls == 0
    assert rows["smc@8+zs"].value_calls == 8 * 2 * 5 * 2  # two resampling steps < T
    assert rows["bon@4"].cost_usd > rows["react"].cost_usd > 0
    assert rows["bon@4"].prompt_tokens == 4 * rows["react"].prompt_tokens


def test_local_priors_cost_nothing_and_the_cli_prints_totals():
    rows = estimate(_cfg("prior.name=embedded", "prior.options={}"))
    assert all(r.cost_usd == 0 for r in rows)
    r = CliRunner().invoke(app, ["run", "--env", "synthetic", "--prior", "openai", "--model",
                                 "gpt-5.1", "-m", "bon@15", "--max-tasks", "3", "--dry-run"])
    assert r.exit_code == 0, r.output
    assert "at most" in r.output and "$" in r.output and "gpt-5.1" in r.output
