"""Re-selection: a stored result scored by another selection value equals a fresh run with it.

Kills: re-selection that resamples (trajectories change), that forgets dropped finished
trajectories or scores failed ones (deployable differs from the fresh run), that keeps the old
selection's values, or that touches what the selection does not decide (oracle, max weight).
"""

import asyncio
import math

from amc.config import SMCConfig
from amc.smc.reselect import reselect
from amc.smc.sampler import run_task
from tests.smc.conftest import BETA, TASK
from tests.smc.test_deployable_selection import Recording

SMC = SMCConfig(n_particles=8, max_steps=4, beta=BETA, resample="fixed", resample_steps=(1, 2),
                resample_terminated=True)


class Reversed(Recording):
    """Another selection value: the opposite preference of :class:`Recording`."""

    async def score(self, histories):
        return [-v for v in await super().score(histories)]


def _run(synth, selection, seed):
    return asyncio.run(run_task(suite=synth["suite"], prior=synth["prior"], value=synth["exact"],
                                task_id=TASK, smc=SMC, seed=seed, selection=selection))


def test_reselected_result_equals_a_fresh_run_with_the_new_value(synth):
    changed = 0
    for seed in range(6):
        old, fresh = _run(synth, Recording(), seed), _run(synth, Reversed(), seed)
        new = asyncio.run(reselect(old, Reversed(), config_hash="h2",
                                   success_threshold=SMC.success_threshold))
        assert new.config_hash == "h2"
        assert [r.steps for r in new.trajectories] == [r.steps for r in old.trajectories]
        assert [r.selection_value for r in new.trajectories] == \
            [r.selection_value for r in fresh.trajectories]
        for k in ("deployable_reward", "success_deployable", "oracle_best", "max_weight_reward",
                  "weighted_mean_reward", "log_z"):
            assert math.isclose(new.metrics[k], fresh.metrics[k]), (seed, k)
        assert new.usage == old.usage and new.wall_s == old.wall_s  # nothing was rerun
        changed += old.metrics["deployable_reward"] != new.metrics["deployable_reward"]
    assert changed  # the new value picked other answers somewhere: the check had teeth


def test_reselect_without_a_value_clears_the_deployable_answer(synth):
    new = asyncio.run(reselect(_run(synth, Recording(), 0), None, config_hash="h",
                               success_threshold=SMC.success_threshold))
    assert math.isnan(new.metrics["deployable_reward"])
    assert all(r.selection_value is None for r in new.trajectories)
