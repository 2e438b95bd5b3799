"""Which prior change hurts a stale value head? One that inverts what the head reads.

The earlier searches (``studies/drift/candidates.py``: skill level and action style;
``studies/drift/subtask.py``: which subtask the prior is good at) found no change that hurts:
on TextCraft more of the plan done is better under any of those priors, so a head trained on
one ranks particles rightly under the other. A change that hurts must make states the head
weighs up bad under the new prior. Here the change is how the model reacts to feedback it
asked for (``prior.options.after``, :func:`amc.priors.planner_mix.after`): the menu offers
``inventory``, whose observation starts ``Inventory:``; model version A grounds its plan on
the listing (after one, it follows the plan: skill 1.0), version B is derailed by it (skill
0.1). A head trained on A learns that a particle which listed its inventory is good; under B
the same particle is doomed. The trigger is text the head sees (no planner internals), as an
LLM deployment's head would see a model's tool calls.

Declared before running (nothing below was chosen on a head's result; the probe, recorded
in the output as ``probe``, runs the priors alone on train tasks to show that the trigger is
frequent and the reaction large: a sizing of the regime, not of the outcome):

- regimes, in this order: (1) the drift demo's (:func:`studies.drift.demo.demo_params`,
  ``scale="measure"``: TextCraft depth 2-3, 6 steps, resampling after steps 2 and 4, beta
  0.05, a 1-layer MiniLM head of ``max_length`` 128 from 64 tasks x 8 rollouts), unchanged;
  (2) the same with the whole 6-layer MiniLM as the head's backbone (``train.num_layers``
  6), declared after regime 1 ran: there the stale head's gain fell but the retrained head
  did not recover it, and a diagnostic on train tasks the collection did not use
  (``studies/drift/head_diagnostic.py``, ``evidence/drift/head-diagnostic.json``: a 1-layer
  head trained on the grounding prior, its scores of fresh rollouts' states at the two
  resampling steps) found it scoring listed states barely above unlisted ones at step 2 and
  below them at step 4, though they succeed far more often; the listing is in what the head
  reads (the probe's ``rendered_there``), so the 1-layer head fails to learn it;
  (3) regime 1 (the 1-layer head) with the success reward (``env.options.reward`` binary)
  instead of the dense one, declared while regime 2's second candidate ran, before its result
  and before this regime ran: under the dense reward the head learns the remaining inventory
  value, in which a listing is a step without progress whatever follows, while what the prior
  change flips is the chance of success after a listing (the probe: 0.87 vs 0.45 when the prior
  grounds its plan on it, 0.125 vs 0.35 when it is derailed); under the success reward the
  head's target is that chance itself;
- candidates, in this order: (A, B) = ({q 0.5, after Inventory 1.0}, {q 0.5, after Inventory
  0.1}), then the reverse;
- evaluation, measures and rule: ``studies/drift/subtask.py``'s (48 test tasks x seeds 500-502,
  N = 4, paired by (task, seed), averaged within task, t interval over tasks and exact
  sign-flip p; chosen: the first candidate whose fall g1 - g0 lies below 0 and whose recovery
  g2 - g1 lies above 0).

``python -m studies.drift.feedback [--done RESULTS.txt [--only-done]] [out.json]``
(default ``evidence/drift/candidates-feedback.json``); each row records its seconds (a
6-layer head trains several times slower than a 1-layer one).
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from typing import Any

import numpy as np

from studies.drift.demo import demo_params
from studies.drift.subtask import Options, Regime, run_set

KEY = "Inventory"
CANDIDATES: tuple[tuple[Options, Options], ...] = (
    ({"q": 0.5, "after": {KEY: 1.0}}, {"q": 0.5, "after": {KEY: 0.1}}),
    ({"q": 0.5, "after": {KEY: 0.1}}, {"q": 0.5, "after": {KEY: 1.0}}),
)
"""(prior A options, prior B options), in the declared order."""
REGIMES: tuple[Regime, ...] = ((0.05, {}), (0.05, {"train": {"num_layers": 6}}),
                               (0.05, {"env": {"options": {"reward": "binary"}}}))
"""(``smc.beta``, overrides of the demo's params) of each regime, in the declared order (the
second declared after the first ran, the third while the second's last candidate ran)."""
LISTED = "inventory :"
"""A listing's observation as the (uncased) tokenizer decodes it (the action reads
``inventory`` without the colon)."""
LENGTHS = (128,)
"""The head lengths (tokens, left-truncated) whose input the probe reads: the demo's."""
PROBE_TASKS, PROBE_ROLLOUTS, PROBE_BY, LAST = 48, 8, 2, 4
"""The probe: train tasks, rollouts per task (one seeded generator), and the step by which a
listing counts (the first resampling), and the last resampling's step."""


async def rollouts(opts: Options, tasks: slice, per_task: int, seed: int) -> list[Any]:
    """The prior with ``opts`` alone on the demo's train tasks ``tasks``: ``per_task`` rollouts
    each (task-major, one generator seeded ``seed``), each to its end or the demo's
    ``smc.max_steps``; their final histories."""
    from amc.envs.replay import build_suite
    from amc.priors.planner_mix import PlannerMixOptions, make_planner_mix_prior
    from amc.types import History, Step

    params = demo_params(scale="measure")
    env_opts, steps = params["env"]["options"], params["smc"]["max_steps"]
    prior = make_planner_mix_prior(PlannerMixOptions(**opts), env_name="textcraft",
                                   env_options=env_opts)
    suite = build_suite("textcraft", env_opts)
    rng = np.random.default_rng(seed)
    out = []
    for task in suite.task_ids("train")[tasks]:
        for _ in range(per_task):
            env = suite.make()
            h = History(task, env.reset(task))
            while h.t < steps and not h.done:
                turn = await prior.propose(h, rng)
                st = env.step(turn.action)
                h = h.extend(Step(turn.raw_text, turn.action, st.observation, st.reward,
                                  st.done))
            out.append(h)
            env.close()
    await prior.aclose()
    return out


def prefix(h: Any, t: int) -> Any:
    """The state of history ``h`` after its first ``t`` steps."""
    return replace(h, steps=h.steps[:t])


def listed(h: Any) -> bool:
    """Whether the history holds an inventory listing."""
    return any(s.observation.startswith(KEY) for s in h.steps)


async def _probe_one(opts: Options) -> dict[str, Any]:
    from amc.value.model import ModelConfig, load_tokenizer_for
    from amc.value.render import RenderOptions, render

    tok = load_tokenizer_for(ModelConfig())  # the demo head's backbone (left truncation)
    runs = await rollouts(opts, slice(0, PROBE_TASKS), PROBE_ROLLOUTS, 0)
    split: dict[bool, list[float]] = {True: [], False: []}  # listed by PROBE_BY -> successes
    for h in runs:
        split[listed(prefix(h, PROBE_BY))].append(float(h.done))
    # listings before the last resampling, and whether the head's input there still holds them
    late = [prefix(h, LAST) for h in runs if h.t >= LAST and listed(prefix(h, LAST))]
    texts = [render(h, RenderOptions(env="textcraft")) for h in late]  # the pipeline's
    seen = {n: sum(LISTED in tok.decode(tok(x, truncation=True, max_length=n)["input_ids"])
                   for x in texts) for n in LENGTHS}  # the head reads the last n tokens
    return {"prior": opts, "rollouts": len(runs), "listed_by_step": PROBE_BY,
            "listed": len(split[True]) / len(runs),
            "success": (sum(split[True]) + sum(split[False])) / len(runs),
            "success_if_listed": float(np.mean(split[True])) if split[True] else None,
            "success_if_not": float(np.mean(split[False])) if split[False] else None,
            "listed_by_last_resampling": len(late),
            "rendered_there": {str(n): seen[n] / len(late) if late else None
                               for n in LENGTHS}}


def probe() -> list[dict[str, Any]]:
    """Each prior alone (no head): how often it lists its inventory by the first resampling,
    and its success with and without a listing."""
    priors = {str(o): o for pair in CANDIDATES for o in pair}
    return [asyncio.run(_probe_one(o)) for o in priors.values()]


def main(argv: list[str]) -> None:
    run_set(argv, CANDIDATES, REGIMES, "evidence/drift/candidates-feedback.json",
            {"probe": probe()})


if __name__ == "__main__":
    main(sys.argv[1:])
