"""Two consecutive rounds on the cheap prior, end to end, with real DVC and a real MLflow store.

A temp git + DVC project holds the pipeline with ``rounds.enabled``, TextCraft (offline recipes,
crafting depth <= 2) and the planner-mix prior (q = 0.5: no LLM), a 1-layer MiniLM value head.
``python -m amc.pipeline.round`` runs twice; each run is one round: fresh rollouts, a new
dataset version (``dvc commit``), a new model version, a gate decision, and the lineage that
ties them together (ledger, ``dvc.lock``, MLflow inputs/tags/descriptions); each run prints a
line per stage and one for the round.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.pipeline.conftest import copy_stage_inputs

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
MODEL = "amc-value-textcraft"


def toy_params() -> dict:
    p = yaml.safe_load((ROOT / "params.yaml").read_text())
    p["env"] = {"name": "textcraft", "options": {"reward": "dense", "max_depth": 2}}
    p["prior"] = {"name": "planner-mix", "options": {"q": 0.5}}
    p["smc"].update(max_steps=6, resample_steps=[2])
    p["collect"].update(max_tasks=4, rollouts=4, seeds=[0])
    p["rounds"].update(enabled=True, window=None)
    p["train"].update(epochs=1, max_length=64, num_layers=1)
    p["evaluate"].update(methods=["bon", "amc"], n_grid=[2], seeds=[0], max_tasks=3)
    p["report"].update(calibration_states=10)
    return p


def run(root: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(root),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("MLFLOW_TRACKING_URI", None)  # the default: sqlite:///mlruns/mlflow.db
    proc = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=2400)
    assert proc.returncode == 0, f"{args}: {proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def lock_hash(root: Path, path: str) -> str:
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    return next(o["md5"] for st in lock["stages"].values() for o in st.get("outs", ())
                if o["path"] == path)


@pytest.fixture(scope="module")
def two_rounds(tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[Path, list[str], list[str]]:
    root = tmp_path_factory.mktemp("rounds-project")
    shutil.copytree(ROOT / "amc", root / "amc", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "dvc.yaml", root / "dvc.yaml")
    copy_stage_inputs(root)  # the declared held-out task lists collect reads
    (root / "params.yaml").write_text(yaml.safe_dump(toy_params(), sort_keys=False))
    (root / ".gitignore").write_text("mlruns/\n__pycache__/\n/data/rounds\n")
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@amc.invalid"],
                ["git", "config", "user.name", "amc test"], ["dvc", "init", "-q"],
                ["dvc", "config", "core.analytics", "false"],
                ["cp", str(ROOT / ".dvcignore"), ".dvcignore"],  # the repo's: timing/ out
                ["git", "add", "-A"], ["git", "commit", "-qm", "toy rounds"]):
        run(root, *cmd)
    hashes, outs = [], []
    for _ in range(2):
        outs.append(run(root, sys.executable, "-m", "amc.pipeline.round"))
        hashes.append(lock_hash(root, "data/dataset"))
    return root, hashes, outs


def test_two_rounds_give_two_dataset_versions_in_dvc(
        two_rounds: tuple[Path, list[str], list[str]]) -> None:
    root, hashes, _ = two_rounds
    assert hashes[0] != hashes[1]
    for h in hashes:  # both versions are in the DVC cache: `dvc checkout` can restore either
        assert (root / ".dvc/cache/files/md5" / h[:2] / h[2:]).is_file(), h
    ledger = [json.loads((root / f"data/rounds/round-000{r}.json").read_text()) for r in (0, 1)]
    assert [rec["status"] for rec in ledger] == ["closed", "closed"]
    assert [rec["seeds"] for rec in ledger] == [[1000], [2000]]  # fresh blocks past collect.seeds
    assert [rec["steps"]["dataset"]["rounds"] for rec in ledger] == [[0], [0, 1]]
    assert [rec["steps"]["train"]["dataset_dvc"] for rec in ledger] == hashes
    assert all(rec["prior"]["name"] == "planner-mix" and rec["prior"]["options"] == {"q": 0.5}
               and rec["prior"]["prompt_sha256"] for rec in ledger)
    for r, seed in ((0, 1000), (1, 2000)):
        files = sorted(p.name for p in (root / f"data/trajectories/round-000{r}").iterdir())
        assert files == [f"bon@4__seed{seed}.jsonl", "manifest.json", "timing"]  # timing/:
        # the wall times, outside DVC's hashes (.dvcignore)
    assert "up to date" in run(root, "dvc", "status")  # every stage recorded in dvc.lock


def test_two_model_versions_with_a_gate_decision_and_lineage(
        two_rounds: tuple[Path, list[str], list[str]]) -> None:
    import mlflow

    root, hashes, _ = two_rounds
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{root}/mlruns/mlflow.db")
    versions = sorted(client.search_model_versions(f"name = '{MODEL}'"),
                      key=lambda v: int(v.version))
    assert [str(v.version) for v in versions] == ["1", "2"]
    for r, v in enumerate(versions):
        assert v.tags["amc.round"] == str(r) and v.tags["dataset_dvc"] == hashes[r]
        assert v.tags["promotion.decision"] in ("promoted", "kept")
        assert f"Round {r}" in v.description and "Gate " in v.description
        assert hashes[r] in v.description
    assert versions[0].tags["promotion.decision"] == "promoted"  # no champion yet
    exps = {e.name: e.experiment_id for e in client.search_experiments()}
    for r in (0, 1):
        (train,) = client.search_runs([exps["amc-value"]], f"tags.`amc.round` = '{r}'")
        # the name says what differs between two trainings: data, learning rate, epochs; the
        # data as the dataset stage's line names it (its content hash, issue 63)
        ledger = json.loads((root / f"data/rounds/round-{r:04d}.json").read_text())
        content = ledger["steps"]["dataset"]["content_hash"][:8]
        assert train.info.run_name.startswith(f"train r{r} · dataset {content} · lr ")
        assert train.info.run_name.endswith(" · 1 ep")
        (ds,) = train.inputs.dataset_inputs
        assert ds.dataset.digest == hashes[r]
        assert {t.key: t.value for t in ds.tags}["mlflow.data.context"] == "training"
        (ev,) = client.search_runs([exps["amc-evaluate"]], f"tags.`amc.round` = '{r}'")
        digests = {d.dataset.digest for d in ev.inputs.dataset_inputs}
        assert hashes[r] in digests and len(digests) == 2  # challenger's data + the eval set
        for kind in ("collect", "dataset", "promote", "report"):
            (one,) = client.search_runs([exps[f"amc-{kind}"]], f"tags.`amc.round` = '{r}'")
            assert one.data.tags["amc.stage"] == kind
            assert one.info.run_name.startswith(f"{kind} r{r}")
    # the collect run was open before the first rollout was written (it spans the work)
    (col,) = client.search_runs([exps["amc-collect"]], "tags.`amc.round` = '1'")
    first = (root / "data/trajectories/round-0001/bon@4__seed2000.jsonl").stat()
    assert col.info.start_time / 1000 <= first.st_mtime <= col.info.end_time / 1000


def test_each_round_prints_a_line_per_stage_and_its_decision(
        two_rounds: tuple[Path, list[str], list[str]]) -> None:
    _, _, outs = two_rounds
    for r, out in enumerate(outs):
        lines = [ln for ln in out.splitlines() if ln.startswith(f"round {r}")]
        stages = [ln.split(" · ", 1)[1].split(":", 1)[0] for ln in lines[:-1]]
        assert stages == ["collect", "dataset", "train", "evaluate", "promote", "report"], out
        assert f" from rounds {[0, 1][:r + 1]}, content " in lines[1]
        assert lines[2].startswith(f"round {r} · train: {MODEL} version {r + 1} (")
        assert re.fullmatch(rf"round {r} closed: (promoted|kept) {MODEL} v{r + 1} "
                            rf"\(seeds \[{1000 * (r + 1)}\]\)", lines[-1]), lines[-1]
