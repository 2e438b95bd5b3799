"""OpenAIPrior against loopback OpenAI-compatible servers (the HTTP boundary)."""

import asyncio
import json
import logging
import time

import numpy as np
import pytest

from amc.priors.openai import OpenAIOptions, OpenAIPrior
from amc.registry import PRIORS
from amc.types import INVALID_ACTION, History
from tests.priors.loopback import Faults, LoopbackServer
from tests.priors.toycraft import OBSERVATION0, ToyCraftEnv, run_particles

H = History("toy-1", OBSERVATION0, valid_actions=tuple(ToyCraftEnv().valid_actions()))


def prior(srv, **kw) -> OpenAIPrior:
    kw = {"model": "toy-model", "prompt": "menu", "backoff_base_s": 0.05, **kw}
    return OpenAIPrior(OpenAIOptions(base_url=srv.url, **kw), env="textcraft")


def actions(histories):
    return [h.actions for h in histories]


def test_request_rules_for_chat_completion_and_gpt5_models():
    local = "http://127.0.0.1:9/v1"
    chat = OpenAIPrior(OpenAIOptions(base_url=local, cache=False), env="textcraft")
    req = chat.build_request(H, seed=5)
    assert req["messages"][0]["role"] == "system" and req["seed"] == 5
    assert (req["temperature"], req["top_p"], req["max_tokens"]) == (1.0, 0.95, 1024)
    comp = OpenAIPrior(OpenAIOptions(base_url=local, endpoint="completions", cache=False))
    req = comp.build_request(H, seed=5)
    assert req["prompt"].endswith("Action:") and req["stop"] == ["\n"]
    gpt5 = OpenAIPrior(OpenAIOptions(base_url=local, model="gpt-5.1", cache=False))
    req = gpt5.build_request(H, seed=5)
    assert req["reasoning_effort"] == "none" and req["max_completion_tokens"] == 4096
    assert not {"temperature", "top_p", "max_tokens", "stop"} & set(req)
    pinned = OpenAIPrior(OpenAIOptions(base_url=local, model="gpt-5-mini",
                                       reasoning_effort="low", cache=False))
    assert pinned.build_request(H, seed=1)["reasoning_effort"] == "low"


def test_missing_key_for_a_remote_endpoint_fails_before_any_task():
    with pytest.raises(ValueError, match="set the environment variable OPENAI_API_KEY"):
        PRIORS.build("openai", {"base_url": "https://api.example.com/v1"}, env_name="textcraft")
    with pytest.raises(ValueError, match=r"extra_forbidden|Extra inputs"):
        PRIORS.build("openai", {"api_key": "sk-in-config"}, env_name="textcraft")


async def test_episode_through_the_registry(clean_server):
    p = PRIORS.build("openai", {"base_url": clean_server.url, "model": "toy", "prompt": "menu"},
                     env_name="textcraft")
    hs = await run_particles(p, n=4, steps=6)
    assert all(a != INVALID_ACTION for h in hs for a in h.actions)
    assert p.ledger.run.calls == sum(h.t for h in hs) and p.ledger.run.cost_usd == 0.0
    assert sum((s.usage for h in hs for s in h.steps), start=type(p.ledger.run)()) == p.ledger.run
    await p.aclose()


async def test_faults_change_nothing_but_the_retry_count(clean_server, faulty_server):
    clean = prior(clean_server, cache=False)
    faulty = prior(faulty_server, cache=False, timeout_s=0.5)
    a = await run_particles(clean, n=8, steps=6, seed=3)
    b = await run_particles(faulty, n=8, steps=6, seed=3)  # raises if a particle failed
    assert actions(a) == actions(b)
    counts = faulty_server.counts
    assert counts["429"] + counts["500"] + counts["stall"] >= 3
    assert faulty.ledger.run.retries == counts["429"] + counts["500"] + counts["stall"]
    assert sum(s.usage.retries for h in b for s in h.steps) == faulty.ledger.run.retries
    assert clean.ledger.run.retries == 0
    await clean.aclose()
    await faulty.aclose()


@pytest.mark.parametrize("kind", ["truncated", "empty", "null", "drop"])
async def test_damaged_200_answers_are_retried_and_change_nothing(clean_server, kind):
    """30% of answers cut short, without choices, with null content or dropped mid-body."""
    clean = prior(clean_server, cache=False)
    a = await run_particles(clean, n=6, steps=5, seed=4)
    with LoopbackServer(faults=Faults(**{f"rate_{kind}": 0.3}, seed=2)) as srv:
        damaged = prior(srv, cache=False)
        b = await run_particles(damaged, n=6, steps=5, seed=4)  # raises if a particle failed
        assert srv.counts[kind] >= 3 and damaged.ledger.run.retries == srv.counts[kind]
        await damaged.aclose()
    assert actions(a) == actions(b)
    await clean.aclose()


@pytest.mark.parametrize("kind", ["truncated", "empty", "null"])
async def test_always_damaged_answers_fail_the_particle_after_the_retries(kind):
    with LoopbackServer(faults=Faults(**{f"rate_{kind}": 1.0})) as srv:
        p = prior(srv, max_retries=2, backoff_base_s=0.001)
        turn = await p.propose(H, np.random.default_rng(0))
        assert turn.error.startswith("gave up after 2 retries: malformed response")
        assert turn.action == INVALID_ACTION and srv.counts["requests"] == 3
        assert len(p.cache) == 0  # a damaged answer is never cached
        await p.aclose()


async def test_401_fails_fast_with_one_clear_message(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-0123456789")
    with LoopbackServer(require_key="sk-right-key") as srv:
        p = prior(srv)
        first = await p.propose(H, np.random.default_rng(0))
        assert first.error.startswith("authentication failed (401)")
        assert "0123456789" not in first.error
        t0 = time.monotonic()
        rest = await asyncio.gather(*(p.propose(H, np.random.default_rng(i)) for i in range(20)))
        assert time.monotonic() - t0 < 0.5 and srv.counts["requests"] == 1
        assert {t.error for t in rest} == {first.error}
        assert len(p.cache) == 0  # errors are never cached
        await p.aclose()


async def test_context_overflow_fails_the_particle_without_retrying():
    with LoopbackServer(max_context_tokens=50) as srv:
        p = prior(srv)
        turn = await p.propose(H, np.random.default_rng(0))
        assert turn.error.startswith("context length exceeded (400)")
        assert turn.action == INVALID_ACTION and srv.counts["requests"] == 1
        await p.aclose()


async def test_budget_stops_proposing_and_is_recorded(clean_server):
    p = prior(clean_server, budget_tokens=1500, cache=False)
    turns = [await p.propose(H, np.random.default_rng(i)) for i in range(10)]
    errors = [t.error for t in turns if t.error]
    assert errors and errors[0].startswith("budget exhausted")
    assert all(t.error is None for t in turns[: 10 - len(errors)])
    assert "toy-1" in p.ledger.budget_stops and p.ledger.task("toy-1").total_tokens >= 1500
    assert (await p.propose(History("other", "x"), np.random.default_rng(0))).error is None
    await p.aclose()


async def test_rerun_with_same_seed_is_answered_from_the_cache(tmp_path):
    with LoopbackServer() as srv:
        first = prior(srv, cache_path=str(tmp_path / "r.sqlite"))
        a = await run_particles(first, n=4, steps=5, seed=11)
        calls = srv.counts["requests"]
        await first.aclose()
        second = prior(srv, cache_path=str(tmp_path / "r.sqlite"))
        b = await run_particles(second, n=4, steps=5, seed=11)
        assert actions(a) == actions(b) and srv.counts["requests"] == calls
        # replayed usage by default: the rerun reports what the calls cost, sending none
        assert second.ledger.cache_hits == calls and second.ledger.run == first.ledger.run
        c = await run_particles(second, n=4, steps=5, seed=12)  # new seed: new calls
        assert srv.counts["requests"] > calls and c
        await second.aclose()


async def test_cache_replays_usage_by_default_and_can_report_zero(tmp_path):
    with LoopbackServer() as srv:
        first = prior(srv, cache_path=str(tmp_path / "r.sqlite"))
        await run_particles(first, n=3, steps=4, seed=5)
        spent, calls = first.ledger.run, srv.counts["requests"]
        await first.aclose()
        replay = prior(srv, cache_path=str(tmp_path / "r.sqlite"))
        await run_particles(replay, n=3, steps=4, seed=5)
        assert srv.counts["requests"] == calls and replay.ledger.cache_hits == calls
        # the replayed ledger equals what the calls cost the first time, task by task
        assert replay.ledger.run.total_tokens == spent.total_tokens > 0
        assert replay.ledger.run.calls == spent.calls == calls
        await replay.aclose()
        paid = prior(srv, cache_path=str(tmp_path / "r.sqlite"), cache_replays_usage=False)
        await run_particles(paid, n=3, steps=4, seed=5)
        assert paid.ledger.cache_hits == calls and paid.ledger.run.total_tokens == 0
        await paid.aclose()


async def test_limiter_caps_requests_in_flight():
    with LoopbackServer(delay_s=0.1) as srv:
        p = prior(srv, max_in_flight=3, cache=False)
        await asyncio.gather(*(p.propose(H, np.random.default_rng(i)) for i in range(10)))
        assert p.limiter.peak_in_flight == 3
        await p.aclose()


async def test_api_key_never_reaches_logs_or_outputs(tmp_path, monkeypatch, caplog, capsys,
                                                      faulty_server):
    secret = "sk-test-SECRETSECRET-abcdef123456"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    caplog.set_level(logging.DEBUG)
    out = tmp_path / "out"
    p = prior(faulty_server, cache_path=str(out / "cache.sqlite"), timeout_s=0.5)
    hs = await run_particles(p, n=3, steps=4, seed=5)
    with LoopbackServer(require_key="sk-other") as srv:
        bad = prior(srv, cache_path=str(out / "cache.sqlite"))
        turn = await bad.propose(H, np.random.default_rng(0))
        await bad.aclose()
    (out / "results.jsonl").write_text("\n".join(
        json.dumps({"steps": [s.to_dict() for s in h.steps]}) for h in hs))
    (out / "ledger.json").write_text(json.dumps(p.ledger.summary()))
    (out / "turn.txt").write_text(repr(turn) + repr(p) + repr(p.options))
    await p.aclose()
    printed = capsys.readouterr()
    for blob in [caplog.text, printed.out, printed.err,
                 *(f.read_bytes().decode("latin-1") for f in out.rglob("*") if f.is_file())]:
        assert "SECRETSECRET" not in blob and "abcdef123456" not in blob
