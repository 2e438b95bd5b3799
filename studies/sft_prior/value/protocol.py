"""The declared value protocol of the fine-tuned prior's chosen regime (issue 62, item 1).

Written once, before the regime search ends and before any test cell: which values compete,
on which states they train and are scored, what is measured and how one is chosen. It is
parameterised by the regime -- ``evidence/sft-prior/regime-search/room.json``'s ``chosen``
(checkpoint, depth, horizon H, N, first resampling step t, beta) is read at run time, and the
training collection is sized now for every (depth, H) the search can choose:

- **training data**: the fine-tuned prior's own Best-of-8 rollouts (``amc run``, horizon H,
  binary reward; :mod:`.collect`) on every TextCraft train-split task at the chosen depth that
  no declaration reserves (:func:`pool`: not in ``heldout.json``'s validation or test reserve
  at any depth, not in the LLM study's 60-task test set), with the seeds per task the CPU
  budget allows (:func:`size`: tasks first, the most seeds that fit);
- **held-out set**: the regime search's kept rollouts of the chosen (checkpoint, depth) cell
  -- its validation tasks, never trained on -- at step t, cut at H;
- **candidates, figures, rule**: :data:`CANDIDATES`, :mod:`.figures`, :data:`RULE`.

``python -m studies.sft_prior.value.protocol`` measures the reading costs (:mod:`.cost`), sizes
the collection from them and writes ``protocol.json`` with the clock's ``declared_utc``; it
refuses to overwrite a declaration.
"""

from __future__ import annotations

import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PROTOCOL = HERE / "protocol.json"
SEARCH = REPO / "evidence/sft-prior/regime-search"
ROOM = SEARCH / "room.json"
TRAIN = REPO / "evidence/sft-prior/value/train"
OUT = REPO / "evidence/sft-prior/value"
HELDOUT = REPO / "studies/sft_prior/heldout.json"
TESTSET60 = REPO / "studies/llm_regime/declared/llm-regime-testset60.json"
SEARCH_PROTOCOL = REPO / "studies/sft_prior/regime_search/protocol.json"
K = 8
"""Rollouts per (task, seed) of the training collection (Best-of-8, as the search)."""
BUDGET_CPU_H = 5.0
"""CPU hours for the training collection plus the LLM reading of its states."""
SEED_OPTIONS = (1, 2, 3, 4)
TASK_SEED = 6200
"""The draw of a task subsample when one seed per task does not fit the budget."""
LLM_TRAIN_STEPS = 3
"""The LLM head trains on the states at steps t .. t + 2 (below H)."""
MINILM_SEEDS = (0, 1, 2)
REFERENCE = "minilm-regression-goal-kept"
OBJECTIVES = ("regression", "pairwise", "listwise", "centred")
RENDERINGS = ("goal-kept", "goal+summary")
CANDIDATES = [f"minilm-{o}-{r}" for r in RENDERINGS for o in OBJECTIVES] + [
    "llm-hidden", "llm-yesno", "llm-yesno-compact"]
RULE = ("At the first resampling step t, the candidate with the largest lower bound of the 95% "
        "task-cluster bootstrap interval of its held-out within-(task, step) AUC (MiniLM "
        "options: training seed 0); lower bounds within 0.01 of the largest are tied and the "
        "cheapest wins (CPU seconds per scored state, this declaration's measured rates: "
        "MiniLM, then the LLM candidates by their rate), then the larger point AUC, then the "
        "order of 'candidates'. A candidate without a defined interval (no mixed task) is never "
        "chosen. The chosen value resamples at its fitted T when the held-out within log-loss "
        "at step t is lower at T than at the regime's beta, else at beta. If the chosen lower "
        "bound is not above 0.5, the result says that no candidate ranks siblings above chance "
        "(the pick stands: the rounds need a value to start from).")


def reserved() -> dict[str, set[str]]:
    """Every task a declaration reserves: heldout.json's lists and the 60-task set's."""
    held = json.loads(HELDOUT.read_text())["tasks"]
    t60 = json.loads(TESTSET60.read_text())
    out = {f"heldout.json {k}": set(map(str, v)) for k, v in held.items()}
    out["llm-regime-testset60"] = {str(t) for k in ("tasks", "test_split_tasks",
                                                     "train_split_tasks", "used_train_tasks")
                                   for t in t60.get(k, [])}
    return out


def pool(depth: int) -> list[str]:
    """The training tasks of ``depth``: its train split less every reserved task."""
    from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite

    suite = TextCraftSuite(TextCraftOptions(min_depth=depth, max_depth=depth, n_distractors=10))
    taken = set().union(*reserved().values())
    return sorted((str(t) for t in suite.task_ids("train") if str(t) not in taken), key=int)


def check_training_tasks(tasks: list[str], depth: int) -> None:
    """Refuse training tasks outside the pool: reserved ones are named with their set."""
    leaks = {name: sorted(set(tasks) & s, key=int) for name, s in reserved().items()}
    leaks = {k: v for k, v in leaks.items() if v}
    if leaks:
        raise ValueError(f"training tasks a declaration reserves: {leaks}")
    outside = sorted(set(tasks) - set(pool(depth)), key=int)
    if outside:
        raise ValueError(f"training tasks outside the depth-{depth} train split: {outside}")


def size(tasks: list[str], horizon: int, cpu_step: float, cpu_read: float, cpu_yesno: float,
         budget_h: float = BUDGET_CPU_H) -> dict[str, Any]:
    """Tasks and seeds of one (depth, H) collection: every task, the most seeds that fit the
    budget (or, when one seed does not, the seeded subsample of tasks that does). Costs per
    (task, seed), at worst (every rollout runs H steps; all of t .. t + 2 below H): the K
    rollouts' particle-steps, the LLM reading of their training states and the yes/no
    values of their step-t states when the task validates (20% of tasks)."""
    import numpy as np

    collect = K * horizon * cpu_step
    read = K * min(LLM_TRAIN_STEPS, horizon - 1) * cpu_read + 0.2 * K * cpu_yesno
    per = collect + read
    fits = [s for s in SEED_OPTIONS if len(tasks) * s * per <= budget_h * 3600]
    seeds, chosen = (max(fits), list(tasks)) if fits else (1, sorted(
        (str(t) for t in np.random.default_rng(TASK_SEED).choice(
            tasks, max(1, math.floor(budget_h * 3600 / per)), replace=False)), key=int))
    return {"tasks": chosen, "n_tasks": len(chosen), "seeds": list(range(seeds)),
            "rollouts": len(chosen) * seeds * K,
            "cpu_s_per_task_seed": {"collect": collect, "llm_reading": read},
            "cpu_h": len(chosen) * seeds * per / 3600, "subsampled": not fits}


def declaration(cost: dict[str, Any]) -> dict[str, Any]:
    """The protocol document (without ``declared_utc``)."""
    from studies.sft_prior.declare_test import cpu_per_particle_step
    from studies.sft_prior.value.reader import ReaderConfig
    from studies.value_options.measure import OPTIONS

    search = json.loads(SEARCH_PROTOCOL.read_text())
    r = cost["rates"]
    cpu_step = cpu_per_particle_step(K)
    cpu_yesno = r["llm-yesno"]["cpu_s_per_state"] + r["llm-yesno-compact"]["cpu_s_per_state"]
    cpu_llm = r["llm-hidden"]["cpu_s_per_state"] + cpu_yesno
    plans: dict[str, Any] = {}
    held: dict[str, Any] = {}
    for d in map(int, search["candidates"]["depth"]):
        tasks = pool(d)
        check_training_tasks(tasks, d)
        plans[str(d)] = {str(h): size(tasks, h, cpu_step, r["llm-hidden"]["cpu_s_per_state"],
                                      cpu_yesno)
                         for h in search["candidates"]["horizon"][str(d)]}
        n_val = len(search["collection"]["tasks"][str(d)])
        states = n_val * len(search["collection"]["seeds"]) * K
        held[str(d)] = {"tasks": n_val, "states_at_most": states,
                        "llm_cpu_h_at_most": states * cpu_llm / 3600}
    cost_order = sorted(CANDIDATES, key=lambda c: (
        r["minilm"] if c.startswith("minilm") else r[c])["cpu_s_per_state"])
    return {
        "name": "sft-prior-value", "issue": 62, "item": 1,
        "question": "Which value ranks the fine-tuned prior's siblings best at the chosen "
                    "regime's first resampling step, among the existing options (frozen "
                    "MiniLM-L6, linear head) and values that read the state with the "
                    "fine-tuned LLM itself?",
        "regime": "read at run time: evidence/sft-prior/regime-search/room.json 'chosen' "
                  "(checkpoint, depth, horizon H, N, step t, beta); every step of this "
                  "protocol refuses while it is null. The regime resamples once, after step t "
                  "(the room's definition, amc.value.room): the resampling steps are [t].",
        "prior": "hf, the chosen checkpoint's kept adapter sft/kept/textcraft/step-NNNNNN "
                 "merged, its policy.json options (compact prompt, menu) with the search's "
                 "sampling (temperature 1, top_k 40, top_p 0.95, max_new_tokens 24)",
        "training": {
            "rollouts": f"the fine-tuned prior's own Best-of-{K} rollouts (amc run, method "
                        f"bon@{K}, smc.max_steps = H, binary reward, 10 distractors): "
                        "python -m studies.sft_prior.value.collect, kept gzipped under "
                        "evidence/sft-prior/value/train/step-NNNNNN/depthD/",
            "tasks": "every train-split task of the chosen depth outside heldout.json (both "
                     "depths' validation and test reserve) and llm-regime-testset60 (its "
                     "tasks and train tasks). These tasks were demonstrated to the SFT run "
                     "(its demos use every other train task): the held-out and test tasks "
                     "were not, so the held-out figures see the shift the test will.",
            "sizing": f"per (depth, H): all pool tasks, the most seeds in {list(SEED_OPTIONS)} "
                      f"whose CPU time fits {BUDGET_CPU_H:g} CPU hours (collection at the "
                      "benchmark's CPU s per particle-step at N = 8, every rollout running H "
                      "steps; plus the LLM reading of the training states at its measured "
                      "CPU s per state); if one seed does not fit, a seeded task subsample "
                      f"(default_rng({TASK_SEED})). Tasks before seeds: a value must "
                      "generalise to unseen tasks.",
            "budget_cpu_h": BUDGET_CPU_H, "cpu_s_per_particle_step_n8": cpu_step,
            "plans": plans,
            "validation": "amc.value.data.split_tasks(DatasetOptions(seed=0)): 20% of the "
                          "training tasks validate (MiniLM early stopping, the LLM head's "
                          "feature and penalty, every candidate's temperature fit); the "
                          "rest train",
            "states": "MiniLM options: every prefix k = 0..min(T, H) (the pipeline's dataset "
                      "rows, target the reward to come within H). LLM head: the non-terminal "
                      f"states at steps t .. t + {LLM_TRAIN_STEPS - 1} below H (its reading "
                      "costs a forward pass of the 270M model per state)."},
        "held_out": {
            "rollouts": "the regime search's kept rollouts of the chosen cell (evidence/sft-"
                        "prior/regime-search/step-NNNNNN/depthD/bon@8__seed{0,1}): its "
                        "validation tasks (heldout.json validation-depthD), never trained on",
            "states": "prefixes after t actions of rollouts not ended by step t, cut at H; "
                      "success = reward 1 within H; siblings = one task's step-t states over "
                      "both seeds; runs = (task, seed, index // N)",
            "size_by_depth": held},
        "candidates": {
            **{f"minilm-{o}-{rr}": f"frozen MiniLM-L6 (128 tokens) + linear head, objective "
               f"{o} (studies.value_options.measure.OPTIONS), rendering {rr}, training seeds "
               f"{list(MINILM_SEEDS)}" for rr in RENDERINGS for o in OBJECTIVES},
            "llm-hidden": "logistic head (studies.sft_prior.value.head) on the fine-tuned "
                          "model's hidden state of the prior's own prompt (compact transcript "
                          "+ menu): last token or mean over tokens, layer 9 or 18, L2 in "
                          "{1, 0.1, 0.01, 0.001}: chosen on validation at step t",
            "llm-yesno": "P(Yes)/(P(Yes)+P(No)) of the fine-tuned model after amc's "
                         "zero-shot-yesno prompt (value renderer, 'Will the agent complete "
                         "the task?'), no training",
            "llm-yesno-compact": "the same question after the prior's compact transcript "
                                 "(menu and 'Action:' dropped), no training"},
        "reader": {k: v for k, v in ReaderConfig(adapter="<the chosen checkpoint>")
                   .model_dump().items() if k not in ("adapter", "depth")},
        "minilm_objectives": OPTIONS,
        "temperature": "each candidate's T fitted on the validation states at step t "
                       "(amc.value.temperature.fit_temperature on V)",
        "not_candidates": "the MiniLM encoder fine-tuned: on the base model's rounds the fully "
                          "fine-tuned values ranked siblings at chance (within AUC 0.49-0.54 "
                          "over four rounds), and its measured cost (studies/value_options/"
                          "results.json 'cost': 14 states/s a training step) buys one "
                          "objective per half hour; the decoder-LM value (LoRA) needs a device",
        "figures": "on the held-out states at each resampling step: within-(task, step) AUC "
                   "with its 95% task-cluster bootstrap interval (2000 draws) and the paired "
                   f"difference to {REFERENCE}; within-group spread of V and its ratio to "
                   "beta and to the fitted T (weight ratio exp(spread / beta)), per (task, t) "
                   "group and per run of N; within-group log-loss at beta, at T and uniform; "
                   "doomed weight (amc.value.offline.doomed_weight; doomed = the menu-form "
                   "planner needs more steps than H - t leave, and the rollout did not "
                   "succeed); the validation within AUC beside; MiniLM seed range",
        "reference": REFERENCE, "rule": RULE, "cost_order": cost_order,
        "goal": "issue 62: the chosen value's held-out within AUC >= 0.65 at step t (chosen on "
                "this set: the test is the unbiased look)",
        "cost": cost,
        "outputs": "evidence/sft-prior/value/result.json and result.md "
                   "(python -m studies.sft_prior.value.measure)"}


def chosen_regime(room: Path = ROOM) -> dict[str, Any]:
    """room.json's chosen regime; a clear refusal (SystemExit) when there is none yet."""
    if not room.is_file():
        raise SystemExit(f"refused: {room.relative_to(REPO) if room.is_relative_to(REPO) else room}"
                         " does not exist: the regime search has not been analysed "
                         "(python -m studies.sft_prior.regime_search.analyse)")
    c = json.loads(room.read_text()).get("chosen")
    if not c:
        raise SystemExit(f"refused: {room.name} has no chosen regime (chosen is null): the "
                         "value protocol is parameterised by it; nothing to train or score")
    return c


def plan(c: dict[str, Any], proto: dict[str, Any] | None = None) -> dict[str, Any]:
    """The declared collection of the chosen regime's (depth, H)."""
    p = proto if proto is not None else json.loads(PROTOCOL.read_text())
    return p["training"]["plans"][str(c["depth"])][str(c["horizon"])]


def main() -> int:
    from amc.results import dumps
    from studies.sft_prior.value.cost import measure

    if PROTOCOL.exists():
        print(f"error: {PROTOCOL.name}: already declared; a declaration is written once",
              file=sys.stderr)
        return 2
    doc = declaration(measure())
    doc["declared_utc"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # the clock
    PROTOCOL.write_text(dumps(doc, indent=1) + "\n")
    print(f"declared {PROTOCOL.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
