"""The held-out quality of the learned values a benchmark's cells used (docs/evidence.md).

For WebShop and SciWorld (stages ``value_webshop`` / ``value_sciworld``): per value id the cells
recorded, the training data (states, train tasks outside validation, skills) and the final
model's held-out Pearson / AUC / AUC within (task, step), beside the Monte-Carlo rollout
value's figures on the same states where the stage measured them (WebShop; SciWorld's stage
has none: its rollouts fork a JVM, so the declared rollout test cells are its ceiling).
"""

from __future__ import annotations

from typing import Any

from studies.sweeps.grid import is_current
from studies.sweeps.report import fmt_diff
from studies.sweeps.select import compare

TARGET = {"webshop": "the graded score to come", "sciworld": "the score to come"}
TASKS = {"webshop": "goals", "sciworld": "games"}
CAVEAT = {"webshop": " Its rollouts take the agent's remaining steps only, not WebShop's forced "
          "buy after the last one, so from a state that would end on an item page it can score "
          "0 where the episode is scored."}


def value_note(runs: list[dict[str, Any]], values: dict[str, dict[str, Any]], bench: str) -> str:
    """One sentence per learned value id of ``bench``'s cells (empty: none ran)."""
    ids = sorted({str(r["value_model_hash"]) for r in runs
                  if r["cell"].get("benchmark", "textcraft") == bench
                  and r["cell"]["value"] == "learned" and r.get("value_model_hash")})
    return "\n".join(_one(v, values.get(v), bench) for v in ids)


def _one(v: str, q: dict[str, Any] | None, bench: str) -> str:
    if q is None:
        return f"Learned V_θ `{v}`: no quality record under evidence/values."
    f, c, splits = q["final"], q.get("ceiling"), q["data"]["splits"]
    tr, states = splits["train"], c["states"] if c else splits[q["held_out"]]["rows"]
    skills = ", ".join(f"{x:g}" for x in q["data"]["q_grid"])
    text = (f"Learned V_θ `{v}` (stage value_{bench}: {tr['rows']} training states of "
            f"{tr['tasks']} train {TASKS[bench]} outside validation, planner-mix q ∈ "
            f"{{{skills}}}, target {TARGET[bench]}): on {states:.0f} held-out states Pearson "
            f"{f['test_pearson']:.3f}, AUC {f['test_auc']:.3f}, AUC within "
            f"({TASKS[bench][:-1]}, step) {f['test_auc_within']:.3f}")
    if c is None:
        return text + ("; the stage scores no rollout ceiling on these states (each rollout "
                       "forks a JVM), so its ceiling is the rollout-value test cell.")
    return (text + f"; the rollout value on the same states (M = {c['rollouts']:.0f}) Pearson "
            f"{c['pearson']:.3f}, AUC {c['auc']:.3f}, within {c['auc_within']:.3f}."
            + CAVEAT.get(bench, ""))


def split_current(runs: list[dict[str, Any]], current: dict[str, str]
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(every cell but the superseded ones, the learned cells of a benchmark that ran with a
    value other than its stage's current one, ``current``: benchmark -> model hash). The
    superseded cells are kept and listed (:func:`superseded_note`), never chosen or tabled."""
    def now(r: dict[str, Any]) -> bool:
        return is_current(r, current.get(r["cell"].get("benchmark", "textcraft")))

    return [r for r in runs if now(r)], [r for r in runs if not now(r)]


def superseded_note(old: list[dict[str, Any]], bench: str) -> str:
    """One sentence per superseded cell of ``bench``: value, split, skill, AMC - BoN."""
    rows = [r for r in old if r["cell"].get("benchmark", "textcraft") == bench]
    if not rows:
        return ""
    parts = [f"`{r.get('value_model_hash')}` {r['cell']['split']} q = {r['cell']['q']:g}, "
             f"N = {r['cell']['n']}: {fmt_diff(compare(r))} over {len(r['rows'])} pairs"
             for r in sorted(rows, key=lambda r: (str(r.get("value_model_hash")), r["name"]))]
    return ("Superseded (kept, not in the tables: cells of an earlier learned value of this "
            "benchmark, AMC − Best-of-N on the oracle best-of-pool score): " + "; ".join(parts)
            + ".")
