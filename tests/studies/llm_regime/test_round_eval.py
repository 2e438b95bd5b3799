"""A round's declared-set params, the round-0 seed from kept rollouts, the registry guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from amc.pipeline import rounds
from amc.pipeline.params import load_params
from studies.llm_regime import round_eval, round_restore
from tests.pipeline.conftest import TOY_PARAMS, register_version


def _params(**extra: dict) -> Path:
    p = {**TOY_PARAMS, "rounds": {"enabled": True, "ledger_dir": "runs/r/ledger"},
         "collect": {**TOY_PARAMS["collect"], "out_dir": "runs/r/trajectories"}, **extra}
    Path("rounds.yaml").write_text(yaml.safe_dump(p))
    return Path("rounds.yaml")


def _template() -> dict:
    Path("declared.json").write_text(json.dumps({"tasks": ["t0", "t1"]}))
    return {**TOY_PARAMS, "smc": {**TOY_PARAMS["smc"], "max_steps": 7},
            "evaluate": {"tasks_file": "declared.json", "methods": ["bon", "amc"],
                         "n_grid": [4], "seeds": [0, 1, 2], "learned_value": "learned"}}


def _trained_round(p: object, version: int) -> None:
    rec = rounds.open_round(p)  # type: ignore[arg-type]
    rounds.record_step(p, int(rec["round"]), "train",  # type: ignore[arg-type]
                       {"model": "amc-value-synthetic", "version": str(version),
                        "result": {"best_val_pearson": 0.5}})
    rounds.close_round(p, int(rec["round"]))  # type: ignore[arg-type]


def test_declared_params_pin_the_rounds_challenger_and_keep_the_templates_sampling(
        workdir: Path) -> None:
    p = load_params(_params())
    _trained_round(p, 1)
    _trained_round(p, 2)
    t = _template()
    out = round_eval.declared_params(p, t, 1, Path("runs/r"), n_grid=[4, 8])
    assert out["evaluate"]["challenger"] == "models:/amc-value-synthetic/2"  # round 1, not 0
    # what the kept baselines' hash is made of stays the template's
    assert (out["prior"], out["env"], out["smc"]) == (t["prior"], t["env"], t["smc"])
    assert out["smc"]["max_steps"] == 7  # the template's, not the rounds' 10
    ev = out["evaluate"]
    assert ev["tasks_file"] == "declared.json" and ev["seeds"] == [0, 1, 2]
    assert ev["n_grid"] == [4, 8] and ev["smc_n_grid"] == [4] and not ev["compare_champion"]
    assert out["evaluate"]["out_dir"] == "runs/r/declared/round-0001/eval"
    assert out["mlflow_uri"] == p.mlflow_uri
    assert t["evaluate"].get("challenger") is None  # the template itself is untouched
    Path("t.yaml").write_text(yaml.safe_dump(t))
    written = round_eval.write_declared_params(Path("rounds.yaml"), Path("t.yaml"), 0,
                                               Path("runs/r/declared/round-0000.yaml"))
    assert load_params(written).evaluate.challenger == "models:/amc-value-synthetic/1"


def test_declared_params_refuse_an_untrained_round_and_another_env(workdir: Path) -> None:
    p = load_params(_params())
    rounds.open_round(p)
    with pytest.raises(ValueError, match="round 0 has no trained version"):
        round_eval.declared_params(p, _template(), 0, Path("runs/r"))
    rounds.record_step(p, 0, "train", {"model": "m", "version": "1"})
    other = {**_template(), "env": {"name": "synthetic", "options": {"depth": 5}}}
    with pytest.raises(ValueError, match="is not the rounds' env"):
        round_eval.declared_params(p, other, 0, Path("runs/r"))


def test_round0_is_seeded_once_with_the_kept_files(workdir: Path) -> None:
    p = load_params(_params())
    kept = Path("kept")
    kept.mkdir()
    (kept / "bon@4__seed0.jsonl").write_text('{"task_id": "t0"}\n')
    assert round_eval.seed_round0(p, kept)
    dest = rounds.round_dir(p, 0) / "bon@4__seed0.jsonl"
    assert dest.read_text() == '{"task_id": "t0"}\n'
    assert rounds.load_round(p, 0)["seeds"] == [0] and round_eval.closed_rounds(p) == []
    assert not round_eval.seed_round0(p, kept)  # a round exists: nothing is copied again
    rounds.close_round(p, 0)
    assert round_eval.closed_rounds(p) == [0]
    with pytest.raises(FileNotFoundError):
        round_eval.seed_round0(load_params(_params(rounds={"enabled": True,
                                                            "ledger_dir": "other"})), Path("no"))


def test_registry_guard_finds_the_missing_versions_and_refuses_a_mixed_store(
        workdir: Path) -> None:
    p = load_params(_params())
    _trained_round(p, 1)
    _trained_round(p, 2)
    assert [r["round"] for r in round_restore.missing_rounds(p)] == [0, 1]
    register_version(workdir, 0.9)  # version 1 of another model than the ledger's
    assert [r["round"] for r in round_restore.missing_rounds(p)] == [1]
    with pytest.raises(RuntimeError, match="restore into an empty store"):
        round_restore.restore_registry(p)


def test_the_real_rounds_reuse_the_kept_baselines_rollouts_and_rerun_only_amc(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """configs/llm-regime/rounds.yaml + testset60.yaml: ReAct, Best-of-4 and zero-shot SMC@4
    keep the kept results' sample hash (re-selected only); AMC@4 with the round's value not."""
    import gzip

    from amc.pipeline import evaluate
    from amc.run_hash import sample_hash
    from amc.runner import resolve_methods

    root = Path(__file__).resolve().parents[3]
    monkeypatch.chdir(root)
    y = yaml.safe_load((root / "configs/llm-regime/rounds.yaml").read_text())
    y["rounds"]["ledger_dir"] = str(tmp_path / "ledger")
    y["collect"]["out_dir"] = str(tmp_path / "traj")
    (tmp_path / "rounds.yaml").write_text(yaml.safe_dump(y))
    p = load_params(tmp_path / "rounds.yaml")
    rounds.open_round(p)
    rounds.record_step(p, 0, "train", {"model": "amc-value-textcraft-llm-rounds", "version": "1"})
    q = load_params(round_eval.write_declared_params(
        tmp_path / "rounds.yaml", root / "configs/llm-regime/testset60.yaml", 0,
        tmp_path / "r0.yaml"))
    pl = {"tasks": ["0"], "seeds": [0], "models": {"challenger": {"uri": q.evaluate.challenger}},
          "methods": [{"spec": s} for s, _, _ in evaluate.method_specs(q, False)]}
    cfg = evaluate.run_config(q, pl)
    same = {}
    for m in resolve_methods(cfg):
        with gzip.open(root / f"evidence/llm-regime/testset60/eval/{m.name}__seed0.jsonl.gz") as f:
            same[m.name] = json.loads(f.readline())["sample_hash"] == sample_hash(cfg, m)
    assert same == {"react": True, "bon@4": True, "smc@4": True, "smc@4+challenger": False}


def test_the_declared_sets_kept_results_keep_their_hash_with_the_store_named() -> None:
    """testset60.yaml names its MLflow store (mlflow_uri), which evaluate now passes to the
    learned value: the kept results (written with the store in $MLFLOW_TRACKING_URI) still
    match the plan's configuration hash, so nothing kept is dropped and re-run."""
    import gzip

    from amc.config import config_hash
    from amc.pipeline import evaluate
    from amc.run_hash import _method_run_config
    from amc.runner import resolve_methods

    root = Path(__file__).resolve().parents[3]
    q = load_params(root / "configs/llm-regime/testset60.yaml")
    ev = json.loads((root / "evidence/llm-regime/testset60/evaluation.json").read_text())
    pl = {"tasks": ["0"], "seeds": [0], "models": ev["models"],
          "methods": [{"spec": s} for s, _, _ in evaluate.method_specs(q, False)]}
    cfg = evaluate.run_config(q, pl)
    assert q.mlflow_uri and cfg.values["challenger"].options["tracking_uri"] == q.mlflow_uri
    for m in resolve_methods(cfg):
        with gzip.open(root / f"evidence/llm-regime/testset60/eval/{m.name}__seed0.jsonl.gz") as f:
            assert json.loads(f.readline())["config_hash"] == config_hash(
                _method_run_config(cfg, m)), m.name
