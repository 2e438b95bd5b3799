"""Strict YAML: keys given twice, alias bombs; the run's size limits and task ids."""

from __future__ import annotations

import time

import pytest

from amc.config import RunConfig, load_run_config, parse_override, read_yaml


def bomb(levels: int) -> str:
    rows = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(rows) + "\n"


def test_a_key_given_twice_is_refused_with_its_line():
    with pytest.raises(ValueError, match=r"f.yaml: line 3: key 'seeds' is given twice"):
        read_yaml("seeds: [0]\nmax_tasks: 1\nseeds: [1]\n", "f.yaml")
    with pytest.raises(ValueError, match="'beta' is given twice"):
        read_yaml("smc: {beta: 1, n_particles: 2, beta: 2}", "f")
    # the same key in two mappings, and a merge key overridden, are fine
    assert read_yaml("a: {b: 1}\nc: {b: 2}\n", "f") == {"a": {"b": 1}, "c": {"b": 2}}
    assert read_yaml("a: &x {b: 1, c: 2}\nd: {<<: *x, b: 3}\n", "f")["d"] == {"b": 3, "c": 2}


def test_an_alias_bomb_is_refused_before_it_expands(monkeypatch):
    started = time.process_time()
    with pytest.raises(ValueError, match=r"more than 100000 values .*AMC_YAML_MAX_VALUES=N"):
        read_yaml(bomb(9), "bomb.yaml")  # 9^9 values if expanded
    with pytest.raises(ValueError, match="AMC_YAML_MAX_VALUES"):
        read_yaml("a: &a [1, *a]", "loop")  # an alias inside itself never ends
    assert time.process_time() - started < 5  # refused from the text, not by expanding it
    small = bomb(4)  # 9^4 = 6561 leaf values: under the default, over a lowered limit
    assert len(read_yaml(small, "f")["a3"]) == 9
    monkeypatch.setenv("AMC_YAML_MAX_VALUES", "1000")
    with pytest.raises(ValueError, match="more than 1000 values"):
        read_yaml(small, "f")
    with pytest.raises(ValueError, match="more than 1000"):
        parse_override("x=" + "{" + bomb(4).strip().replace("\n", ", ") + "}")


def test_empty_task_ids_are_refused_not_read_as_every_task():
    with pytest.raises(ValueError, match="task_ids: no task ids given"):
        load_run_config(overrides=["task_ids=[]"])
    assert load_run_config(overrides=["task_ids=[3]"]).task_ids == ("3",)


def test_limits_are_config_with_defaults_a_run_can_raise():
    assert RunConfig().limits.max_particles == 10_000
    assert load_run_config(overrides=["limits.max_particles=50000"]).limits.max_particles == 50000
    with pytest.raises(ValueError, match=r"limits\.max_particle_steps"):
        load_run_config(overrides=["limits.max_particle_steps=0"])
