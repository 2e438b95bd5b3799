"""The multi-step cell: its run configuration is the declared one; its analysis pairs the
arms by task and bills the value's rollouts."""

import gzip
import json
from pathlib import Path

import pytest

from amc.config import RunConfig, validate
from studies.sft_prior.multistep import analyse as ms
from studies.sft_prior.multistep.run import config, protocol


def test_the_run_is_the_declared_cell_and_only_declared_seeds_play() -> None:
    p, cfg = protocol(), config(1)
    run = validate(RunConfig, cfg, "multistep")
    smc = p["cell"]["arms"]["smc@4+rollout"]
    assert run.prior.options["dtype"] == "bfloat16"
    assert run.prior.options["adapter"] == "sft/kept/textcraft-dagger1/step-000100"
    assert list(run.task_ids) == p["cell"]["tasks"] and list(run.seeds) == [1]
    assert list(run.smc.resample_steps) == smc["resample_steps"] == [2, 4, 6]
    assert run.smc.beta == smc["beta"] and run.smc.max_steps == p["cell"]["horizon"]
    assert run.values["rollout"].options["concurrent"] is True
    assert run.methods == ("smc@4+rollout", "bon@4")
    with pytest.raises(ValueError, match="seed 2 is not declared"):
        config(2)


def record(task: str, seed: int, method: str, success: float, calls: int,
           values: list[float] | None = None) -> dict:
    steps = [{"t": 2, "resampled": values is not None, "values": values}]
    return {"task_id": task, "seed": seed, "method": method, "metrics": {"success": success},
            "usage": {"calls": calls}, "steps": steps}


def write(folder: Path, name: str, recs: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / name, "wt") as f:
        f.write("".join(json.dumps(r) + "\n" for r in recs))


def test_the_difference_is_paired_by_task_with_seeds_averaged_and_calls_billed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ms, "FP32_CELL", tmp_path / "none")
    smc = [record("a", 0, "smc@4+rollout", 1, 150, [0.0, 0.0, 0.0, 0.0]),
           record("a", 1, "smc@4+rollout", 1, 170, [0.0, 0.9, 0.0, 0.0]),
           record("b", 0, "smc@4+rollout", 0, 200), record("b", 1, "smc@4+rollout", 1, 160),
           record("c", 0, "smc@4+rollout", 1, 120)]  # c's Best-of-4 is missing: no pair
    bon = [record("a", 0, "bon@4", 0, 32), record("a", 1, "bon@4", 1, 30),
           record("b", 0, "bon@4", 0, 32), record("b", 1, "bon@4", 0, 26)]
    write(tmp_path, "smc@4+rollout__seed0.jsonl.gz", smc)
    write(tmp_path, "bon@4__seed0.jsonl.gz", bon)
    r = ms.analyse(tmp_path)
    # per task: a (1 + 1)/2 - (0 + 1)/2 = 0.5, b (0 + 1)/2 - 0 = 0.5; c unpaired
    assert r["runs"] == 4 and r["tasks"] == 2
    assert r["difference"]["mean"] == pytest.approx(0.5)
    assert r["calls_ratio"] == pytest.approx((150 + 170 + 200 + 160) / (32 + 30 + 32 + 26))
    assert r["goal_met"] is None  # 4 of 60 declared runs: not judged
    assert r["blind_resampling_share"] == {"2": 0.5}  # one of the two resampling events
    assert "incomplete: 4 of 60" in ms.markdown(r)
