"""The regime search's analysis on real TextCraft episodes of a random-valid-action agent: every
declared regime gets a row, the choice rule and its ties, the kept files' round trip."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from studies.llm_regime.regime_search import analyse
from studies.llm_regime.regime_search.keep import keep
from studies.llm_regime.regime_search.tasks import validation_tasks


def write_runs(root: Path, tasks: list[str], seeds=(0, 1), n=8, steps=8) -> None:
    suite = TextCraftSuite(TextCraftOptions(max_depth=1, n_distractors=10))
    for seed in seeds:
        rng = np.random.default_rng(seed)
        lines = []
        for task in tasks:
            env, trajs = suite.make(), []
            for _ in range(n):
                obs0, out = env.reset(task), []
                for _ in range(steps):
                    a = str(rng.choice(env.valid_actions()))
                    r = env.step(a)
                    out.append({"raw_text": a, "action": a, "observation": r.observation,
                                "reward": r.reward, "done": r.done})
                    if r.done:
                        break
                trajs.append({"steps": out})
            lines.append(json.dumps({"task_id": task, "seed": seed, "observation0": obs0,
                                     "trajectories": trajs}) + "\n")
        d = root / "depth1"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"bon@{n}__seed{seed}.jsonl").write_text("".join(lines) + '{"task_id": "cut')


def test_every_declared_regime_is_analysed_from_kept_files(tmp_path: Path) -> None:
    tasks = json.loads((analyse.HERE / "protocol.json").read_text())["collection"]["tasks"]["1"]
    assert validation_tasks(1, 20, 4901) == tasks  # the declared draw recomputes
    write_runs(tmp_path / "runs", tasks, n=8, steps=5)
    kept = keep(tmp_path / "runs", tmp_path / "kept")  # complete lines only, gzipped
    assert [f.name for f in kept] == ["bon@8__seed0.jsonl.gz", "bon@8__seed1.jsonl.gz"]
    result = analyse.analyse(tmp_path / "kept")
    c = json.loads((analyse.HERE / "protocol.json").read_text())["candidates"]
    assert len(result["regimes"]) == len(c["horizon"]) * len(c["n"]) * len(c["resample_step"]) \
        * len(c["beta"])  # depth 2 has no kept files here: skipped
    for r in result["regimes"]:
        assert r["tasks"] == 20 and r["groups"] == 20 * 2 * 8 // r["n"]
        assert 0 <= r["best_of_n_model"] <= 1 and 0 <= r["perfect"] <= 1
        assert r["rollout_ceiling_calls_ratio"] > 1
    text = analyse.markdown(result)
    assert text.count("\n| 1 |") == len(result["regimes"]) and "goal" in text
    assert result["coverage"]["2"] == {"task_seeds_done": 0, "declared": 20}
    assert "depth 2: 0 of 20 (task, seed) runs kept, not analysed" in text
    # What the prior reaches: successes counted within the horizon, and the planner's lengths.
    by_task = analyse.task_histories(analyse.read_records(tmp_path / "kept/depth1"))
    at = [next((i + 1 for i, s in enumerate(h.steps) if s.reward >= 1), None)
          for hs in by_task.values() for _, _, h in hs]
    prior = result["coverage"]["1"]["prior"]
    assert prior["rollouts"] == 320 and prior["successes"] == sum(a is not None for a in at)
    short = analyse.prior_at_depth(by_task, 1, horizon=2)
    assert short["successes"] == sum(a is not None and a <= 2 for a in at) < prior["successes"]
    assert len(prior["plan_lengths"]) == 20 and min(prior["plan_lengths"]) >= 1
    if not result["goal_met"]:
        assert f"{prior['successes']} of 320 rollouts within 8 steps" in text
    # A depth with a (task, seed) missing is not analysed.
    (tmp_path / "kept/depth1/bon@8__seed1.jsonl.gz").unlink()
    assert analyse.analyse(tmp_path / "kept")["regimes"] == []


def test_choice_rule_and_its_ties() -> None:
    base = {"depth": 1, "horizon": 8, "n": 8, "step": 2, "room": 0.12, "room_lo": 0.02,
            "p": 0.01}
    rows = [base, {**base, "n": 4}, {**base, "n": 4, "step": 3},
            {**base, "room": 0.3, "room_lo": -0.01, "p": 0.01},
            {**base, "room": 0.3, "room_lo": 0.1, "p": 0.06}]
    assert analyse.choose(rows) == {**base, "n": 4, "step": 3}
    assert analyse.choose(rows[3:]) is None


def test_test_set_declaration_is_fresh_and_sized(tmp_path: Path) -> None:
    from studies.llm_regime.regime_search import declare_test
    from studies.llm_regime.regime_search.tasks import touched_tasks

    protocol = json.loads((analyse.HERE / "protocol.json").read_text())
    tasks = protocol["collection"]["tasks"]["1"]
    write_runs(tmp_path / "runs", tasks, n=8, steps=5)
    keep(tmp_path / "runs", tmp_path / "kept")
    chosen = {"depth": 1, "horizon": 5, "n": 4, "step": 2, "beta": 0.1, "room": 0.6,
              "room_lo": 0.1, "room_hi": 0.9, "p": 0.01}
    d = declare_test.declaration({"chosen": chosen}, protocol, tmp_path / "kept")
    assert not set(d["tasks"]) & (touched_tasks() | set(tasks))
    assert len(d["tasks"]) == d["power"]["n_plan"] >= 20 and d["power"]["effect"] == 0.3
    assert d["primary"]["a"] == "smc@4+challenger" and d["primary"]["b"] == "bon@4"
    with pytest.raises(declare_test.Infeasible, match="only 32 fresh"):  # a small room
        declare_test.declaration({"chosen": {**chosen, "room": 0.1}}, protocol,
                                 tmp_path / "kept")
