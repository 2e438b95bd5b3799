"""The sweep value's target and data options: averaged rollouts, TD(lambda), SMC-visited states.

Options of :class:`~studies.sweeps.config.ValueParams` (each measured against the base value):

- ``state_rollouts`` = K > 0: every visited state of a train/validation task gets K more
  rollouts of the prior at the episode's own q, and its target becomes the mean of the realised
  return and those K (:func:`amc.value.targets.averaged`);
- ``targets: td``: a first head is trained on the (possibly averaged) targets, scores every
  state, and the targets become lambda-returns over each trajectory
  (:func:`amc.value.targets.lambda_returns`, ``td_lambda``) before the real training;
- ``smc_states``: the value also sees the states AMC visits -- the final pool of AMC
  (``smc@N``, the rollout value, N = ``smc_n``, ``smc_beta``, resampling every
  ``smc_every`` steps) on every value-training task, resampled,
  off-prior states. Past a resampling step a particle's realised return is selected, not a prior
  rollout, so those states' targets are the mean of K = max(``state_rollouts``, 4) fresh prior
  rollouts instead.

The held-out (value-test) rows keep their realised targets, so held-out metrics stay comparable
across options. Extra rollouts use their own seed (``seed + 7919``), not the ceiling's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np

from amc.config import SMCConfig, ValueConfig
from amc.envs.textcraft.env import TextCraftSuite
from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
from amc.smc.methods import parse_method
from amc.smc.sampler import run_task
from amc.types import History
from amc.value.data import histories_from_record, returns_to_go
from amc.value.rollout import RolloutValue, RolloutValueOptions
from amc.value.targets import Key, averaged, keyed, lambda_returns
from studies.sweeps.config import CellParams, ValueParams
from studies.sweeps.tasks import make_suite, task_budget, value_train_tasks

ROLLOUT_SEED_OFFSET = 7919
SMC_TARGET_ROLLOUTS = 4


def prior_for(suite: TextCraftSuite, vp: ValueParams, q: float) -> PlannerMixPrior:
    return PlannerMixPrior(suite, load_planner("textcraft"),
                           PlannerMixOptions(q=q, menu_form=vp.menu_form))


async def smc_histories(vp: ValueParams, cell: CellParams, q: float) -> list[History]:
    """The final pools of AMC with the rollout value on the value-training tasks (skill q)."""
    suite = make_suite(cell)
    prior = prior_for(suite, vp, q)
    out: list[History] = []
    for task in value_train_tasks(suite, cell)[: vp.max_tasks]:
        budget = task_budget(suite, task, vp.slack, vp.menu_form, vp.fixed_budget)
        smc = SMCConfig(n_particles=vp.smc_n, max_steps=budget, beta=vp.smc_beta,
                        resample="fixed",
                        resample_steps=tuple(range(vp.smc_every, budget, vp.smc_every)))
        value = RolloutValue(suite, prior, vp.smc_beta, RolloutValueOptions(
            n_rollouts=cell.rollouts, max_steps=budget, seed=vp.seed))
        res = await run_task(suite=suite, prior=prior, value=value, task_id=task,
                             smc=parse_method(f"smc@{vp.smc_n}", smc, ValueConfig()).smc,
                             seed=vp.seed + 1,
                             method="amc")
        out.extend(histories_from_record(res.to_dict()))
    prior.replay.clear()
    return out


async def rollout_targets(tagged: list[tuple[float, History]], smc: set[int], vp: ValueParams,
                          cell: CellParams, skip: set[str]) -> dict[Key, float]:
    """New targets per (task, trajectory, step) of every history not in a ``skip`` task:
    realised + K rollouts averaged (prior data), K' fresh rollouts only (SMC data, indices
    ``smc`` of ``tagged``)."""
    out: dict[Key, float] = {}
    priors: dict[float, PlannerMixPrior] = {}
    suite = make_suite(cell)
    hs = [h for _, h in tagged]
    for i, (task, g, h) in enumerate(keyed(hs)):
        if task in skip:
            continue
        q = tagged[i][0]
        if q not in priors:
            priors[q] = prior_for(suite, vp, q)
        prior = priors[q]
        k = max(vp.state_rollouts, SMC_TARGET_ROLLOUTS) if i in smc else vp.state_rollouts
        rv = RolloutValue(suite, prior, 1.0, RolloutValueOptions(
            n_rollouts=max(k, 1), max_steps=h.budget or len(h.steps),
            seed=vp.seed + ROLLOUT_SEED_OFFSET))
        togo = returns_to_go([s.reward for s in h.steps])
        for t in range(len(h.steps) + 1):
            extra = (await rv.returns(h.prefix(t)))[0] if k else np.zeros(0)
            if i in smc:
                out[(task, g, t)] = float(extra.mean()) if extra.size else 0.0
            else:
                out[(task, g, t)] = averaged(togo[t], extra)
    for p in priors.values():
        p.replay.clear()
    return out


def td_targets(hs: list[History], values: dict[Key, float], lam: float, skip: set[str],
               exclude: frozenset[int] | set[int] = frozenset()) -> dict[Key, float]:
    """lambda-returns of every trajectory not in a ``skip`` task nor at an ``exclude`` index
    of ``hs``, from the first head's values (the last state's value is 0: it is terminal or
    out of budget); the rewards are the realised ones."""
    out: dict[Key, float] = {}
    for i, (task, g, h) in enumerate(keyed(hs)):
        if task in skip or i in exclude:
            continue
        v = [values[(task, g, t)] for t in range(len(h.steps))] + [0.0]
        for t, y in enumerate(lambda_returns([s.reward for s in h.steps], v, lam)):
            out[(task, g, t)] = y
    return out


def state_values(model_dir: str, dsd: Any) -> dict[Key, float]:
    """The first head's value of every train/validation row, by key."""
    from amc.value.scorers import LearnedValue

    model = LearnedValue.load(model_dir, device="cpu")
    out: dict[Key, float] = {}
    for split in ("train", "validation"):
        ds = dsd[split]
        preds = model.score_texts(list(ds["text"]))
        out.update(zip(zip(ds["task_id"], ds["traj"], ds["step"], strict=True), preds,
                       strict=True))
    return out


def held_out_tasks(tagged: list[tuple[float, History]], opts: Any) -> set[str]:
    """The value dataset's test-split tasks (as :func:`amc.value.data.build_rows` splits with
    the dataset options ``opts``)."""
    from amc.value.data import split_tasks

    return set(split_tasks({h.task_id for _, h in tagged}, opts)["test"])


def apply_targets(ds: Path, tagged: list[tuple[float, History]], smc: set[int],
                  vp: ValueParams, cell: CellParams, cfg: Any, work: Path, held: set[str]
                  ) -> dict[str, Any]:
    """Rewrite the built dataset's train/validation targets per the options; what was done."""
    from amc.value.data import load_dataset_dir
    from amc.value.targets import retarget
    from amc.value.train import train

    skip = held  # the held-out tasks keep their realised targets
    done: dict[str, Any] = {"state_rollouts": vp.state_rollouts, "targets": vp.targets,
                            "smc_trajectories": len(smc)}
    if vp.state_rollouts or smc:
        done["retargeted_rows"] = retarget(
            ds, asyncio.run(rollout_targets(tagged, smc, vp, cell, skip)))
    if vp.targets == "td":
        first = work / "first-head"
        train(ds, cfg.model_copy(update={"track": False}), first)
        dsd = load_dataset_dir(ds)[0]
        current = {k: float(y) for split in ("train", "validation") for k, y in zip(
            zip(dsd[split]["task_id"], dsd[split]["traj"], dsd[split]["step"], strict=True),
            dsd[split]["target"], strict=True)}
        current.update(td_targets([h for _, h in tagged], state_values(str(first), dsd),
                                  vp.td_lambda, skip, smc))
        done["td_rows"] = retarget(ds, current)
    return done
