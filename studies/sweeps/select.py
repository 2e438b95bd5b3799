"""Selecting and comparing sweep cells: the base point, one-factor axes, paired comparisons.

Every number of the evidence document comes from a cell record's per-(task, seed) rows through
:func:`studies.sweeps.stats.paired` (AMC - Best-of-N on the same pairs). Cells are compared one
factor at a time around :data:`BASE`.
"""

from __future__ import annotations

from typing import Any

from studies.sweeps.stats import Paired, paired

BASE: dict[str, Any] = {"depth": 2, "q": 0.4, "beta": 0.25, "schedule": "every", "every": 2,
                        "n": 4, "slack": 1}
"""The base point of the one-factor-at-a-time sweep (sweeps/params.yaml's cell)."""
SCHEDULE_KEYS = ("schedule", "every", "steps", "rho")
VALUES = ("learned", "rollout", "none")
VALUE_LABEL = {"learned": "learned V_θ", "rollout": "rollout upper bound", "none": "none"}
MAIN = "oracle_best"
DEPLOYABLE = ("deployable_reward",)
"""The deployable (reward-free, value-selected) answer's reward in the rows' metrics."""
GOAL = 0.10
SATURATED = 0.95


def schedule_label(cell: dict[str, Any]) -> str:
    s = cell["schedule"]
    if s == "every":
        return f"every {cell['every']}"
    if s == "ess":
        return f"ESS ρ={cell['rho']:g}"
    return "fixed " + ",".join(map(str, cell["steps"]))


def sharpen(cell: dict[str, Any]) -> float:
    """The cell's exponent of the learned value (1 in cells recorded before it existed)."""
    return float(cell.get("sharpen", 1.0))


def factor_value(cell: dict[str, Any], factor: str) -> Any:
    return schedule_label(cell) if factor == "schedule" else cell[factor]


def on_axis(cell: dict[str, Any], factor: str) -> bool:
    """Whether a cell equals the base point on every factor but ``factor``."""
    for k in ("depth", "q", "beta", "n", "slack"):
        if k != factor and cell[k] != BASE[k]:
            return False
    if sharpen(cell) != 1:
        return False
    return factor == "schedule" or (cell["schedule"] == "every" and cell["every"] == BASE["every"])


def axis(runs: list[dict[str, Any]], factor: str, split: str = "test") -> list[dict[str, Any]]:
    """The records on one factor's axis, by value kind then factor value."""
    recs = [r for r in runs if r["cell"]["split"] == split and on_axis(r["cell"], factor)]
    return sorted(recs, key=lambda r: (VALUES.index(r["cell"]["value"]),
                                       _order(factor_value(r["cell"], factor))))


def _order(v: Any) -> tuple[float, str]:
    """Numbers in numeric order (0.05 < 0.1 < 0.25), labels after them alphabetically."""
    return (float(v), "") if isinstance(v, int | float) else (float("inf"), str(v))


def compare(rec: dict[str, Any], metric: str = MAIN) -> Paired | None:
    """AMC vs Best-of-N on one metric over the record's rows (None: metric absent)."""
    rows = rec["rows"]
    if not rows or not all(metric in r[k]["metrics"] for r in rows for k in ("bon", "amc")):
        return None
    return paired([r["task_id"] for r in rows], [r["bon"]["metrics"][metric] for r in rows],
                  [r["amc"]["metrics"][metric] for r in rows])


def deployable(rec: dict[str, Any]) -> tuple[str, Paired] | None:
    for m in DEPLOYABLE:
        p = compare(rec, m)
        if p is not None and p.d.mean == p.d.mean:  # NaN: measured without a selection value
            return m, p
    return None


def selection_loss(rec: dict[str, Any]) -> Paired | None:
    """What the deployable selection gives up against the oracle, Best-of-N (a) vs AMC (b).

    Per row: oracle best-of-pool minus the deployable answer's reward (> 0 when the value picks
    a failing trajectory from a pool that holds a success). The deployable gain is the oracle
    gain minus ``d`` of this comparison. None without a deployable selection."""
    dep = deployable(rec)
    if dep is None:
        return None
    rows = rec["rows"]

    def loss(k: str) -> list[float]:
        return [r[k]["metrics"][MAIN] - r[k]["metrics"][dep[0]] for r in rows]

    return paired([r["task_id"] for r in rows], loss("bon"), loss("amc"))


def calls_ratio(rec: dict[str, Any]) -> float:
    rows = rec["rows"]
    bon = sum(r["bon"]["calls"] for r in rows)
    return sum(r["amc"]["calls"] for r in rows) / bon if bon else float("nan")
