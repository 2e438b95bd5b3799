"""The one params loader: validation before any output is touched, and isolated override runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from amc.pipeline.params import (
    load_params,
    model_name,
    overrides_tag,
    stage_main,
)
from amc.tracking import PARAM_VALUE_LIMIT, flatten_params

ROOT = Path(__file__).resolve().parents[2]


def test_params_yaml_loads_with_every_stage_section() -> None:
    p = load_params(ROOT / "params.yaml")
    assert p.env.name == "textcraft" and p.train.num_layers == 6 and p.dataset.keep == "all"
    assert model_name(p) == "amc-value-textcraft"
    assert p.collect.out_dir == Path("data/trajectories")


def test_overrides_isolate_every_output_and_the_model_name() -> None:
    base = load_params(ROOT / "params.yaml")
    ov = ["env.name=synthetic", "env.options={}", "prior.name=synthetic", "prior.options={}"]
    p = load_params(ROOT / "params.yaml", ov)
    tag = overrides_tag(ov)
    assert tag is not None and tag.startswith("overrides-")
    root = Path("runs") / tag
    outputs = [p.collect.out_dir, p.dataset.out_dir, p.train.out_dir, p.train.metrics_file,
               p.evaluate.out_dir, p.evaluate.metrics_file, p.promote.out_file,
               p.promote.metrics_file, p.report.plots_dir, p.report.summary_file]
    defaults = [base.collect.out_dir, base.dataset.out_dir, base.train.out_dir,
                base.train.metrics_file, base.evaluate.out_dir, base.evaluate.metrics_file,
                base.promote.out_file, base.promote.metrics_file, base.report.plots_dir,
                base.report.summary_file]
    assert outputs == [root / d for d in defaults]
    assert model_name(p) == f"amc-value-synthetic-{tag.removeprefix('overrides-')}"
    # same overrides -> same folder (an interrupted override run resumes), others -> another
    assert load_params(ROOT / "params.yaml", ov).collect.out_dir == p.collect.out_dir
    assert overrides_tag([*ov, "collect.rollouts=2"]) != tag


def test_flows_overrides_change_no_output() -> None:
    p = load_params(ROOT / "params.yaml", ["flows.task_runner=thread", "flows.max_workers=3"])
    assert p.flows.max_workers == 3 and p.collect.out_dir == Path("data/trajectories")
    assert model_name(p) == "amc-value-textcraft"


def test_an_explicit_model_name_survives_isolation() -> None:
    p = load_params(ROOT / "params.yaml", ["train.model_name=my-value", "train.lr=1e-4"])
    assert model_name(p) == "my-value" and p.train.lr == 1e-4
    q = load_params(ROOT / "params.yaml", ["train.model_name=amc-value-textcraft"])
    assert model_name(q) != "amc-value-textcraft"  # the default name is never an override's


def test_component_options_are_validated_by_the_loader(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "params.yaml").read_text())
    data["env"]["name"] = "synthetic"  # keeps TextCraft's options: what `-S env.options={}` did
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=r"options for environment 'synthetic'.*max_depth"):
        load_params(tmp_path / "params.yaml")


def test_stage_main_reports_a_user_error_in_one_line(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "params.yaml").write_text("collect: {rollouts: 0}\n")
    with pytest.raises(SystemExit) as exc:
        stage_main(lambda p: None, [str(tmp_path / "params.yaml")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "collect.rollouts" in err and "\n" not in err
    with pytest.raises(SystemExit, match="usage"):
        stage_main(lambda p: None, ["--help"])


def test_one_param_flattener_keeps_empty_sections_and_truncates() -> None:
    flat = flatten_params({"env": {"name": "x", "options": {}}, "long": "y" * 7000,
                           "smc": {"resample_steps": [2]}})
    assert flat == {"env.name": "x", "env.options": "{}", "long": "y" * PARAM_VALUE_LIMIT,
                    "smc.resample_steps": "[2]"}
