"""params.yaml under mutation (issue 64): a seeded fuzz over keys, types and repeats, checked
through the loader every stage uses, plus a few cheap end-to-end dataset builds.

Each drawn params file (the toy synthetic pipeline with one to three mutations: a value of
another type, a non-finite or absurd number, a list with an item repeated, a key removed or
unknown) must either be refused as a stage refuses it -- ``python -m amc.pipeline.<stage>``
prints one ``error: <key>: <why>`` line naming a params key and exits 2 -- or load into params
whose stages cannot go wrong later: collect's and evaluate's run configurations build (a
refusal there would come after work, in pydantic's words), and every requested method has a
method spec (no method silently dropped). The end-to-end part rebuilds the dataset of one real
toy collection under drawn ``collect.max_tasks`` and held-out sets: the dataset holds exactly
the tasks the section selects, says which collected tasks it left out, or is refused.
"""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from amc.pipeline import artifacts, collect, dataset, evaluate
from amc.pipeline.params import load_params, stage_main
from amc.runner import resolve_methods
from tests.pipeline.conftest import TOY_PARAMS

BASE: dict[str, Any] = {**TOY_PARAMS, "mlflow_uri": "sqlite:///mlruns/mlflow.db"}
VALUES: list[Any] = ["x", "", None, 0, -1, 1, 2.5, 10**12, float("inf"), float("nan"), True,
                     [], [0], ["a", "a"], {}, {"bogus": 1}, "file:///tmp/store",
                     "/tmp/store", "sqlite:///x.db"]
KEY = re.compile(r"^error: [a-z_]+(\.[a-z0-9_]+)*: \S")


def leaves(node: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key path of a nested mapping (sections too)."""
    if not isinstance(node, dict):
        return [path]
    return [path] * bool(path) + [p for k, v in node.items() for p in leaves(v, (*path, k))]


def mutate(rng: random.Random, data: dict[str, Any]) -> str:
    """Apply one drawn mutation in place; returns what it did (for the failure message)."""
    path = rng.choice(leaves(data))
    parent = data
    for k in path[:-1]:
        parent = parent[k]
    old, kind = parent[path[-1]], rng.random()
    if isinstance(old, list) and old and kind < 0.3:
        parent[path[-1]] = [*old, old[0]]  # an item repeated
    elif kind < 0.4:
        del parent[path[-1]]
    elif kind < 0.5 and isinstance(old, dict):
        old["bogus_key"] = 1
    else:
        parent[path[-1]] = copy.deepcopy(rng.choice(VALUES))
    return f"{'.'.join(path)} {old!r} -> {parent.get(path[-1], '<removed>')!r}"


def drawn_cases(seed: int, n: int) -> list[tuple[dict[str, Any], list[str]]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        data = copy.deepcopy(BASE)
        cases.append((data, [mutate(rng, data) for _ in range(rng.randint(1, 3))]))
    return cases


def refusal(path: Path, capsys: pytest.CaptureFixture[str]) -> str | None:
    """The stage entry's stderr when it refuses ``path`` (exit 2), else None. Any other
    exception escapes and fails the test: a crash, not a refusal."""
    try:
        stage_main(lambda p: None, [str(path)])
    except SystemExit as err:
        assert err.code == 2, err
        return capsys.readouterr().err
    assert capsys.readouterr().err == ""
    return None


def stages_build(p: Any) -> None:
    """What the stages derive from loaded params, without running them."""
    resolve_methods(collect.run_config(p, task_ids=["0"]))
    specs = evaluate.method_specs(p, with_champion=True)
    assert {r for _, r, _ in specs} >= set(p.evaluate.methods), (specs, p.evaluate.methods)
    plan = {"tasks": ["0", "1"], "seeds": list(p.evaluate.seeds),
            "methods": [{"spec": s, "role": r, "n": n} for s, r, n in specs],
            "models": {"challenger": {"uri": "models:/m/1"},
                       "champion": {"uri": "models:/m/2"}}}
    resolve_methods(evaluate.run_config(p, plan))


@pytest.mark.parametrize("seed", range(3))
def test_a_mutated_params_file_is_one_key_line_and_exit_2_or_builds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: int) -> None:
    refused = 0
    for k, (data, what) in enumerate(drawn_cases(6400 + seed, 200)):
        path = tmp_path / f"p{k}.yaml"
        path.write_text(yaml.safe_dump(data))
        line = refusal(path, capsys)
        if line is None:
            stages_build(load_params(path))
            continue
        refused += 1
        lines = line.splitlines()
        assert len(lines) == 1 and KEY.match(lines[0]), (what, line)
        assert "Traceback" not in line and "RunConfig" not in line and "bad " not in line[:11]
    assert 20 < refused < 200  # the draws hit both sides


@pytest.mark.parametrize(("section", "key", "value", "says"), [
    ("collect", "seeds", [0, 0], "error: collect.seeds: 0 is given twice"),
    ("evaluate", "seeds", [1, 1], "error: evaluate.seeds: 1 is given twice"),
    ("evaluate", "n_grid", [], "error: evaluate.n_grid: empty, so ['amc', 'bon']"),
    ("evaluate", "smc_n_grid", [], None),  # toy methods have no smc: accepted
    ("smc", "max_steps", 2, "error: smc.resample_steps: [2] not before smc.max_steps = 2"),
    ("evaluate", "methods", ["bon", "bon"], "error: evaluate.methods: 'bon' is given twice"),
    ("prior", "options", {"temperature": float("inf")}, "error: prior.options:"),
    (None, "mlflow_uri", "file:///tmp/store", "error: mlflow_uri: 'file:///tmp/store' is a "
                                              "file store"),
])
def test_the_reported_params_refusals_name_the_key(tmp_path: Path, capsys, section, key,
                                                   value, says) -> None:
    data = copy.deepcopy(BASE)
    if section == "prior":
        data["prior"] = {"name": "openai", "options": value}
    elif section is None:
        data[key] = value
    else:
        data[section][key] = value
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data))
    line = refusal(path, capsys)
    if says is None:
        assert line is None
        return
    assert line is not None and line.startswith(says) and len(line.splitlines()) == 1, line


def test_a_dataset_never_changes_without_a_message(workdir: Path) -> None:
    small = {**TOY_PARAMS, "collect": {"split": "train", "max_tasks": 4, "rollouts": 2,
                                       "seeds": [0]}}
    Path("params.yaml").write_text(yaml.safe_dump(small))
    collect.run(load_params())
    collected = artifacts.collect_tasks(load_params())
    rng = random.Random(64)
    for _ in range(4):
        held = rng.sample(collected, rng.randint(0, 2))
        Path("held.json").write_text(json.dumps({"tasks": held}))
        section = {**small["collect"], "max_tasks": rng.randint(1, 5),
                   "exclude_tasks_files": ["held.json"]}
        Path("params.yaml").write_text(yaml.safe_dump({**small, "collect": section}))
        p = load_params()
        want = artifacts.collect_tasks(p)
        if not set(want) <= set(collected):
            with pytest.raises(ValueError, match=r"^collect\.[a-z_]+: changed since the "
                                                 r"collection.* rerun collect"):
                dataset.run(p)
            continue
        card = dataset.run(p)
        left = sorted(set(collected) - set(want))
        assert card["left_out"] == left
        assert ("left out" in dataset.line(card)) == bool(left)
        assert sum(s["tasks"] for s in card["splits"].values()) == len(want)
