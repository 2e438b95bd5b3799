import pytest

from amc.priors.ledger import PRICES, Budget, Ledger, cost_usd, lookup_price, particle_var
from amc.types import Usage


def test_prices_and_prefix_lookup():
    assert lookup_price("gpt-4.1-mini-2025-04-14") is PRICES["gpt-4.1-mini"]
    assert lookup_price("gpt-5.1-chat") is PRICES["gpt-5.1"]
    assert lookup_price("gpt-5-mini") is PRICES["gpt-5-mini"]
    assert lookup_price("llama-3") is None
    # 800 uncached, 200 cached prompt tokens and 100 completion tokens on gpt-4.1-mini
    assert cost_usd(PRICES["gpt-4.1-mini"], 1000, 100, 200) == pytest.approx(
        (800 * 0.40 + 200 * 0.10 + 100 * 1.60) / 1e6)
    assert cost_usd(PRICES["gpt-5.1"], 10_000, 1_000) == pytest.approx(0.0125 + 0.01)
    assert Ledger.price("local", 5000, 500).cost_usd == 0.0


def test_totals_per_call_particle_task_and_run():
    led = Ledger()
    a = Ledger.price("gpt-4.1-mini", 1000, 100, 200)
    b = Ledger.price("gpt-4.1-mini", 2000, 50, retries=2)
    led.record("t1", a, particle=0)
    led.record("t1", b, particle=1)
    token = particle_var.set(0)
    try:
        led.record("t2", a)
    finally:
        particle_var.reset(token)
    assert led.task("t1") == a + b
    assert led.particles[("t1", 1)] == b and led.particles[("t2", 0)] == a
    assert led.run.calls == 3 and led.run.retries == 2
    assert led.run.prompt_tokens == 4000 and led.run.cached_tokens == 400
    assert led.run.cost_usd == pytest.approx(2 * a.cost_usd + b.cost_usd)
    assert led.summary()["tasks"]["t1"]["calls"] == 2


def test_budget_stops_once_spent_and_records_it():
    led = Ledger(Budget(max_tokens=1500))
    assert led.exhausted("t") is None
    led.record("t", Usage(prompt_tokens=1000, completion_tokens=600, calls=1))
    reason = led.exhausted("t")
    assert reason.startswith("budget exhausted") and "1600 of 1500 tokens" in reason
    assert led.budget_stops == {"t": reason} and led.exhausted("other") is None
    usd = Ledger(Budget(max_usd=0.001))
    usd.record("t", Ledger.price("gpt-5.1", 1000, 100))  # $0.00225
    assert "$0.0022 of $0.0010" in usd.exhausted("t")
