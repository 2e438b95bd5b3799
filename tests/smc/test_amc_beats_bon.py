"""Statistical end-to-end test: SMC with a good value beats Best-of-N where it must.

Regime (docs: /work/shared/design/when-amc-wins.md): TextCraft depth-2 tasks, binary reward,
a tight budget (the optimal plan's length + 1 step), the skill-controlled ``planner-mix``
prior at q = 0.4 (success probability well inside (0, 1), so Best-of-4 is far from
saturation), the Monte-Carlo ``rollout`` value (the ceiling of a learned value), beta = 0.25
(a strongly tilted target), N = 4, resampling every 2 steps. Over 200 fixed (task, seed) pairs
the oracle best-of-pool success of SMC must exceed Best-of-N's by >= 3 paired standard errors.

It fails if resampling ignores the weights, the value is constant, or the value term is dropped
from the weights (checked by hand when the test was written: the gain then vanishes). Best-of-N
and SMC run through ``run_task`` with the configurations :func:`parse_method` makes, as
``amc run`` does; the prior is a simulation instrument, not an LLM.
"""

from __future__ import annotations

import asyncio

import numpy as np

from amc.config import SMCConfig, ValueConfig
from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.tasks import plan
from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
from amc.smc.methods import parse_method
from amc.smc.sampler import run_task
from amc.value.rollout import RolloutValue, RolloutValueOptions
from amc.value.simple import ZeroValue

Q, N, M, BETA, SLACK, EVERY, PAIRS, SEED = 0.4, 4, 8, 0.25, 1, 2, 200, 0


def configs(budget: int) -> tuple[SMCConfig, SMCConfig]:
    """(Best-of-N, SMC) driver settings for one task's step budget."""
    smc = SMCConfig(n_particles=N, max_steps=budget, beta=BETA, resample="fixed",
                    resample_steps=tuple(range(EVERY, budget, EVERY)))
    bon = parse_method(f"bon@{N}", smc, ValueConfig()).smc
    return bon, parse_method(f"smc@{N}", smc, ValueConfig()).smc


async def paired_oracle_success() -> tuple[np.ndarray, np.ndarray]:
    suite = TextCraftSuite(TextCraftOptions(min_depth=2, max_depth=2))
    prior = PlannerMixPrior(suite, load_planner("textcraft"), PlannerMixOptions(q=Q))
    values: dict[int, RolloutValue] = {}  # the value's horizon is the task's budget
    bon, smc = [], []
    for task in suite.task_ids("all")[:PAIRS]:
        budget = len(plan(suite.book, suite.tasks.goal(task))) + SLACK
        if budget not in values:
            values[budget] = RolloutValue(suite, prior, BETA, RolloutValueOptions(
                n_rollouts=M, max_steps=budget))
        c_bon, c_smc = configs(budget)
        r_bon = await run_task(suite=suite, prior=prior, value=ZeroValue(), task_id=task,
                               smc=c_bon, seed=SEED, method="bon")
        r_smc = await run_task(suite=suite, prior=prior, value=values[budget], task_id=task,
                               smc=c_smc, seed=SEED, method="smc")
        bon.append(r_bon.metrics["oracle_best"])
        smc.append(r_smc.metrics["oracle_best"])
    return np.array(bon), np.array(smc)


def test_smc_with_a_good_value_beats_best_of_n_by_three_standard_errors():
    bon, smc = asyncio.run(paired_oracle_success())
    assert bon.size == PAIRS >= 200
    d = smc - bon
    se = d.std(ddof=1) / np.sqrt(d.size)
    report = f"Best-of-{N} {bon.mean():.3f}, SMC {smc.mean():.3f}, diff {d.mean():.3f} ± {se:.3f}"
    assert 0.2 < bon.mean() < 0.8, "regime drifted: Best-of-N out of reach or saturated; " + report
    assert d.mean() >= 3 * se, report
