"""Standard errors over tasks and paired differences, on hand-built (task, seed) scores; the one
standard-error definition (no other module of ``amc/`` computes sd / sqrt(n) itself)."""

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from amc.stats import (
    mean_se,
    paired_difference,
    row_mean_se,
    t_quantile,
    task_mean_se,
    task_means,
)


def test_seeds_are_averaged_within_a_task_before_the_se_over_tasks():
    # task a: seeds 1, 1, 1, 1 (mean 1); task b: seeds 0, 0 (mean 0)
    rows = [("a", 1.0)] * 4 + [("b", 0.0)] * 2
    assert task_means(rows) == {"a": 1.0, "b": 0.0}
    mean, se = task_mean_se(rows)
    assert mean == pytest.approx(0.5)  # over (task, seed) rows it would be 4/6
    assert se == pytest.approx(np.std([1.0, 0.0], ddof=1) / math.sqrt(2))  # = 0.5
    # over the 6 rows it would be sd(1,1,1,1,0,0)/sqrt(6) ~ 0.21


def test_one_task_has_no_standard_error():
    mean, se = task_mean_se([("a", 0.2), ("a", 0.4)])
    assert mean == pytest.approx(0.3) and math.isnan(se)
    assert all(math.isnan(x) for x in task_mean_se([]))


def test_a_nan_score_makes_the_summary_nan():
    assert math.isnan(task_mean_se([("a", 1.0), ("b", math.nan)])[0])


def test_paired_difference_pairs_by_task_and_seed():
    # task difficulty varies a lot; method a is exactly 0.1 better on every (task, seed)
    base = {("t1", 0): 0.0, ("t1", 1): 0.2, ("t2", 0): 0.9, ("t2", 1): 0.7, ("t3", 0): 0.4,
            ("t3", 1): 0.5}
    a = {k: v + 0.1 for k, v in base.items()}
    d = paired_difference(a, base)
    assert d.mean == pytest.approx(0.1) and d.se == pytest.approx(0.0, abs=1e-12)
    assert d.pairs == 6 and d.tasks == 3 and d.interval_excludes_zero
    # ... but 3 tasks all better have exact sign-flip p = 2/8: the tests disagree, no
    # separation claimed (issue 31: the t interval is anti-conservative with few tasks)
    assert d.p == pytest.approx(0.25) and not d.separates
    many = {(f"t{i}", s): 0.1 * i + 0.05 * s for i in range(8) for s in (0, 1)}
    better = paired_difference({k: v + 0.1 for k, v in many.items()}, many)
    assert better.p == pytest.approx(2 / 256) and better.separates
    # unpaired, the s.e. would be ~ sqrt(2) * sd(task means) / sqrt(3) ~ 0.2: no separation
    shuffled = dict(zip(sorted(a), [a[k] for k in sorted(a)][::-1], strict=True))
    assert not paired_difference(shuffled, base).separates


def test_paired_interval_is_a_t_interval_over_task_means_of_the_differences():
    a = {("x", 0): 1.0, ("x", 1): 0.0, ("y", 0): 1.0, ("y", 1): 1.0, ("z", 0): 0.0,
         ("z", 1): 0.0, ("w", 0): 1.0}  # ("w", 0) has no partner: not counted
    b = {("x", 0): 0.0, ("x", 1): 0.0, ("y", 0): 0.0, ("y", 1): 1.0, ("z", 0): 0.0,
         ("z", 1): 1.0}
    d = paired_difference(a, b)
    per_task = np.array([0.5, 0.5, -0.5])  # x: (1 + 0)/2, y: (1 + 0)/2, z: (0 - 1)/2
    se = per_task.std(ddof=1) / math.sqrt(3)
    assert (d.pairs, d.tasks) == (6, 3)
    assert d.mean == pytest.approx(per_task.mean()) and d.se == pytest.approx(se)
    half = 4.302652729911275 * se  # t_{0.975, 2}
    assert (d.lo, d.hi) == (pytest.approx(d.mean - half), pytest.approx(d.mean + half))
    assert t_quantile(0.975, 2) == pytest.approx(4.302652729911275)
    assert not d.separates
    assert d.p == pytest.approx(1.0)  # +0.5, +0.5, -0.5: every sign pattern is as extreme


def test_paired_difference_with_one_task_or_none_has_no_interval():
    one = paired_difference({("a", 0): 1.0, ("a", 1): 1.0}, {("a", 0): 0.0, ("a", 1): 0.0})
    assert one.mean == 1.0 and math.isnan(one.lo) and not one.separates
    none = paired_difference({("a", 0): 1.0}, {("b", 0): 0.0})
    assert none.pairs == 0 and math.isnan(none.mean)


def test_mean_se_on_known_inputs_and_below_two_values():
    mean, se = mean_se([1.0, 2.0, 3.0, 6.0])
    # sample sd = sqrt(((-2)^2 + (-1)^2 + 0 + 3^2) / 3) = sqrt(14 / 3); se = sd / sqrt(4)
    assert mean == 3.0 and se == pytest.approx(math.sqrt(14 / 3) / 2)
    one = mean_se([5.0])
    assert one[0] == 5.0 and math.isnan(one[1])  # no s.e. from one value (never 0)
    assert all(math.isnan(x) for x in mean_se([]))
    with pytest.raises(ValueError, match="1-d"):
        mean_se(np.ones((2, 2)))


def test_row_mean_se_is_mean_se_row_by_row():
    x = np.random.default_rng(0).normal(size=(50, 7))
    m, se = row_mean_se(x)
    assert [(a, b) for a, b in zip(m, se, strict=True)] == [mean_se(r) for r in x]  # exactly
    m1, se1 = row_mean_se(x[:, :1])
    assert np.array_equal(m1, x[:, 0]) and np.isnan(se1).all()
    with pytest.raises(ValueError, match="2-d"):
        row_mean_se(np.ones(3))


def _se_computations(tree: ast.AST) -> list[int]:
    """Lines computing a standard error by hand: ``<...std(...)...> / <...sqrt(...)...>``,
    or calling a library's ``sem``."""
    def calls(node: ast.AST, name: str) -> bool:
        return any(isinstance(c, ast.Call) and name in (getattr(c.func, "attr", None),
                                                        getattr(c.func, "id", None))
                   for c in ast.walk(node))

    return sorted({n.lineno for n in ast.walk(tree)
                   if (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)
                       and calls(n.left, "std") and calls(n.right, "sqrt"))
                   or (isinstance(n, ast.Call) and calls(n, "sem") and not calls(n.func, "sem"))})


def test_the_standard_error_is_computed_only_in_amc_stats():
    repo = Path(__file__).resolve().parents[1]
    found = {str(p.relative_to(repo)): lines for p in sorted(repo.glob("amc/**/*.py"))
             if (lines := _se_computations(ast.parse(p.read_text())))}
    assert found == {"amc/stats.py": found.get("amc/stats.py", [])} and found["amc/stats.py"]
    # the finder sees the forms a second definition would take
    assert _se_computations(ast.parse("se = a.std(ddof=1) / math.sqrt(a.size)")) == [1]
    assert _se_computations(ast.parse("s = np.std(d, axis=1) / np.sqrt(n)")) == [1]
    assert _se_computations(ast.parse("s = scipy.stats.sem(d)")) == [1]
    assert _se_computations(ast.parse("sd = d.std(ddof=1)\nz = x / sd")) == []
