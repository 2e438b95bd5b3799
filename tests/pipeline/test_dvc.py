"""`dvc repro` end to end at toy size in a temp git repo (synthetic env and prior, MiniLM value).

One session-scoped project runs the whole pipeline once; the tests then check its outputs, the
registry, MLflow lineage, selective reruns after a param change, and `dvc exp run -S`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.pipeline.conftest import TOY_PARAMS, copy_stage_inputs

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def toy_params() -> dict:
    p = yaml.safe_load((ROOT / "params.yaml").read_text())
    for k, v in TOY_PARAMS.items():
        if k in ("env", "prior", "smc"):  # replace: the default's options are TextCraft's
            p[k] = dict(v)
        else:
            p.setdefault(k, {}).update(v)
    p["evaluate"].update(learned_value="learned", methods=["react", "bon", "smc", "amc"],
                         n_grid=[2, 4], max_tasks=8)
    p["train"].update(epochs=1, max_length=64, num_layers=1)
    return p


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {**os.environ, "PYTHONPATH": str(root),
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        self.env.pop("MLFLOW_TRACKING_URI", None)  # the default: sqlite:///mlruns/mlflow.db

    def run(self, *args: str) -> str:
        proc = subprocess.run(args, cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=2400)  # a loaded 2-core CI machine
        assert proc.returncode == 0, f"{args}: {proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        self.err = proc.stderr  # the last command's stderr (progress lines, warnings)
        return proc.stdout

    def set_param(self, key: str, value: object) -> None:
        path = self.root / "params.yaml"
        p = yaml.safe_load(path.read_text())
        sec, name = key.split(".")
        p[sec][name] = value
        path.write_text(yaml.safe_dump(p, sort_keys=False))


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    root = tmp_path_factory.mktemp("dvc-project")
    shutil.copytree(ROOT / "amc", root / "amc",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "dvc.yaml", root / "dvc.yaml")
    copy_stage_inputs(root)  # the declared held-out task lists collect reads
    (root / "params.yaml").write_text(yaml.safe_dump(toy_params(), sort_keys=False))
    (root / ".gitignore").write_text("mlruns/\n__pycache__/\n")
    pr = Project(root)
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@amc.invalid"],
                ["git", "config", "user.name", "amc test"], ["dvc", "init", "-q"],
                ["dvc", "config", "core.analytics", "false"],
                ["cp", str(ROOT / ".dvcignore"), ".dvcignore"], ["git", "add", "-A"],
                ["git", "commit", "-qm", "toy pipeline"]):
        pr.run(*cmd)
    pr.log = pr.run("dvc", "repro")  # type: ignore[attr-defined]
    pr.log_err = pr.err  # type: ignore[attr-defined]
    pr.run("git", "add", "-A")
    pr.run("git", "commit", "-qm", "repro")
    yield pr


def test_repro_produces_every_output(project: Project) -> None:
    from amc.results import sessions_wall

    r = project.root
    for path in ("data/trajectories/manifest.json", "data/dataset/source.json", "models/value",
                 "metrics/train.json", "data/eval/evaluation.json", "metrics/eval.json",
                 "data/promotion/decision.json", "metrics/promotion.json",
                 "data/report/summary.json", "plots/success_vs_n.png", "plots/cost_quality.png",
                 "plots/genealogy.png", "plots/calibration.png", "plots/success_vs_n.json",
                 "dvc.lock"):
        assert (r / path).exists(), path
    for stage in ("collect", "dataset", "train", "evaluate", "promote", "report"):
        assert f"python -m amc.pipeline.{stage}" in project.log  # type: ignore[attr-defined]
    _check_stage_lines(project.log)  # type: ignore[attr-defined]
    ev = json.loads((r / "data/eval/evaluation.json").read_text())
    assert ev["status"] == "complete"
    wall, sittings = sessions_wall(r / "data/eval")  # timing/: outside the record's bytes
    assert wall > 0 and sittings == 1 and "wall_s" not in ev  # ran once, in one sitting
    assert ev["config"]["evaluate"]["n_grid"] == [2, 4] and ev["config"]["env"]["name"]
    assert {"react", "bon@4", "smc@4", "smc@4+challenger"} <= set(ev["methods"])
    pr = json.loads((r / "data/promotion/decision.json").read_text())
    assert pr["promote"] and pr["reason"] == "no champion yet"
    # run records (when, how fast) stay in timing/, outside the bytes a rerun reproduces
    assert "decided_at" not in pr
    assert json.loads((r / "data/promotion/timing/decision.json").read_text())["decided_at"]
    trained = json.loads((r / "models/value/metrics.json").read_text())  # the stage's detail
    timed = json.loads((r / "models/value/timing/train.json").read_text())
    assert "train_samples_per_s" in timed and not set(timed) & set(trained)
    summary = json.loads((r / "data/report/summary.json").read_text())
    assert summary["methods"]["bon@4"]["success_se"] is not None
    assert "wall_s" not in summary and summary["config"] == ev["config"]
    paired = summary["paired"]["smc@4+challenger"]
    assert paired["baseline"] == "bon@4" and paired["runs"] == 16  # 8 tasks x 2 seeds
    assert summary["calibration"]["value"] == "learned" and summary["calibration"]["states"]


def _check_stage_lines(log: str) -> None:
    """Each stage's one-line result under `dvc repro` (issue 54): counts, figures, decision."""
    lines = log.splitlines()
    for pattern in (r"collect: 12 tasks x 1 seeds = 12 records, 48 rollouts in data/trajectories",
                    r"dataset [0-9a-f]{8} \(new version\): rows train \d+, validation \d+, test 0",
                    r"train: registered amc-value-synthetic v1 as challenger; validation "
                    r"(auc \d\.\d{3}, )?mae \d\.\d{3}(, pearson -?\d\.\d{3})?",
                    r"evaluate: react 0\.\d\d, .*smc@4\+challenger \d\.\d\d \(success\)",
                    r"promote: PROMOTED v1 to champion: no champion yet",
                    r"report: 4 plots in plots/ \(calibration\.png, cost_quality\.png, "
                    r"genealogy\.png, success_vs_n\.png\); summary data/report/summary\.json; .*"):
        assert any(re.fullmatch(pattern, ln) for ln in lines), (pattern, log[-3000:])


def test_champion_alias_and_lineage_tags(project: Project) -> None:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{project.root}/mlruns/mlflow.db")
    model = client.get_registered_model("amc-value-synthetic")
    assert {k: str(v) for k, v in model.aliases.items()} == {"challenger": "1", "champion": "1"}
    assert model.description.startswith("AMC value model for synthetic:")
    names = {e.name: e.experiment_id for e in client.search_experiments()}
    assert {"amc-collect", "amc-value", "amc-evaluate", "amc-promote", "amc-report"} <= set(names)
    for stage, exp in (("collect", "amc-collect"), ("train", "amc-value"),
                       ("evaluate", "amc-evaluate"), ("promote", "amc-promote")):
        for r in client.search_runs([names[exp]]):  # issue 63: no machine path as source
            assert r.data.tags["mlflow.source.name"] == f"python -m amc.pipeline.{stage}", exp
    run = client.search_runs([names["amc-evaluate"]])[0]
    assert len(run.data.tags["git_commit"]) == 40
    assert run.data.tags["dvc.input.models/value"]  # the train stage's output hash in dvc.lock


def test_param_change_reruns_only_affected_stages(project: Project) -> None:
    project.set_param("report.calibration_states", 30)
    status = project.run("dvc", "status")
    assert "report:" in status and "evaluate:" not in status and "train:" not in status
    project.set_param("evaluate.seeds", [0])
    status = project.run("dvc", "status")
    assert "evaluate:" in status and "collect:" not in status and "train:" not in status
    project.set_param("evaluate.seeds", [0, 1])
    out = project.run("dvc", "repro")
    assert "Running stage 'report'" in out
    for stage in ("collect", "dataset", "train", "evaluate", "promote"):
        assert f"Running stage '{stage}'" not in out
    project.run("git", "commit", "-qam", "calibration states")


def test_exp_run_reuses_the_baselines_rollouts_and_shows_flat_metrics(project: Project) -> None:
    from amc.results import results_path, timing_path

    ev = project.root / "data/eval"
    files = {(s, seed): results_path(ev, s, seed) for s in ("react", "bon@4") for seed in (0, 1)}
    timings = {k: timing_path(ev, *k).read_bytes() for k in files}  # a rerun appends to them
    amc_before = lines_of(results_path(ev, "smc@4+challenger", 0))

    before = {s: lines_of(f) for s, f in files.items()}
    # one experiment for both checks (each `dvc exp run` reruns the toy pipeline: ~1 min)
    out = project.run("dvc", "exp", "run", "-S", "train.lr=1e-4", "-S", "promote.level=0.01")
    assert "Running stage 'train'" in out and "Running stage 'evaluate'" in out
    record = json.loads((ev / "evaluation.json").read_text())
    assert record["models"]["challenger"]["version"] == "2"  # a new model selected ...
    for s, f in files.items():
        after = lines_of(f)
        assert [r["trajectories"][0]["steps"] for r in after] == \
            [r["trajectories"][0]["steps"] for r in before[s]], s  # ... the same rollouts
        assert timing_path(ev, *s).read_bytes() == timings[s], s  # not rerun
        assert after[0]["config_hash"] != before[s][0]["config_hash"]  # re-selected by v2
    amc_after = lines_of(results_path(ev, "smc@4+challenger", 0))  # it depends on the model:
    assert amc_after[0]["sample_hash"] != amc_before[0]["sample_hash"]  # sampled again
    assert "smc@4+champion" in record["methods"]  # v1 (champion) vs v2 on the same pairs
    _check_metrics_and_plots(project)


def _check_metrics_and_plots(project: Project) -> None:
    """After an experiment: dvc exp show carries its params; metrics flat, plots offline."""
    exps = json.loads(project.run("dvc", "exp", "show", "--json"))
    levels = list(_find_key(exps, "promote"))  # params.yaml's promote section, per row
    assert any(isinstance(v, dict) and v.get("level") == 0.01 for v in levels), levels
    metrics = json.loads(project.run("dvc", "metrics", "show", "--json"))
    files = next(iter(metrics.values()))["data"]  # the workspace
    assert set(files) == {"metrics/train.json", "metrics/eval.json", "metrics/promotion.json"}
    for name, entry in files.items():  # small, flat and numeric: readable on a terminal
        values = entry["data"]
        assert 0 < len(values) <= 5, name
        assert all(type(v) in (int, float) for v in values.values()), (name, values)
    proc = subprocess.run(["dvc", "metrics", "show"], cwd=project.root, env=project.env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "failed" not in proc.stdout + proc.stderr, proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) <= 120, proc.stdout
    doc = (ROOT / "docs/pipeline.md").read_text()  # the table docs/pipeline.md shows
    documented = next(ln for ln in doc.splitlines() if ln.strip().startswith("Path  ")).split()
    shown = proc.stdout.splitlines()[0].split()
    # auc needs both outcomes among the toy value's validation states; delta and p a tested gate
    assert set(documented) - {"auc"} <= set(shown) <= set(documented) | {"delta", "p"}, shown
    assert files["metrics/eval.json"]["data"]["complete"] == 1
    html = project.root / "plots-html"
    project.run("dvc", "plots", "show", "-o", str(html))
    page = (html / "index.html").read_text()
    assert "<img" in page and "http" not in page  # images, nothing fetched from a CDN


def lines_of(path: Path) -> list[dict]:
    from amc.results import read_jsonl

    return list(read_jsonl(path))


def _find_key(obj: object, key: str):
    """Every value stored under ``key`` anywhere in nested JSON (dvc exp show's rows)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key:
                yield v
            yield from _find_key(v, key)
    elif isinstance(obj, list):
        for v in obj:
            yield from _find_key(v, key)


def test_every_json_the_pipeline_writes_parses_strictly(project: Project) -> None:
    """No NaN or Infinity token anywhere under data/, metrics/ or plots/ (issue 63)."""

    def refuse(token: str) -> None:
        raise ValueError(token)

    files = [f for top in ("data", "metrics", "plots") for f in (project.root / top).rglob("*")
             if f.suffix in (".json", ".jsonl") and f.is_file()]
    assert len(files) > 10
    for f in files:
        lines = f.read_text().splitlines() if f.suffix == ".jsonl" else [f.read_text()]
        for line in lines:
            try:
                json.loads(line, parse_constant=refuse)
            except ValueError as err:
                raise AssertionError(f"{f.relative_to(project.root)}: {err}") from None


def test_stages_show_their_own_progress_and_no_library_chatter(project: Project) -> None:
    """Issue 63: training shows `train epoch k/K: i/n steps, ..` lines in a log, and none of
    the libraries' bars or info lines reach the console."""
    out = project.log + project.log_err  # type: ignore[attr-defined]
    assert re.search(r"train epoch 1/1: \d+/\d+ steps, \d+ s", out), out[-3000:]
    for chatter in ("Saving the dataset", "Loading weights", "Downloading artifacts",
                    "Validating input example", "Successfully registered model"):
        assert chatter not in out, chatter
