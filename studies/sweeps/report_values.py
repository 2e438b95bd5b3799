"""The evidence document's learned-value parts: the value stage's quality curve (with the
rollout ceiling on the same held-out states), the value's variant in words, and the cells of an
earlier value, kept apart from the tables that use the current one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from amc.value.scale import plot_quality
from studies.sweeps.report import _num, describe, fmt_diff
from studies.sweeps.select import compare, deployable


def _by_step_table(quality: dict[str, Any]) -> str:
    """AUC within (task, step) at each step: the learned value (largest size) vs the ceiling."""
    learned = (quality["curve"][-1] if quality["curve"] else {}).get("auc_within_by_step")
    up = (quality.get("ceiling") or {}).get("auc_within_by_step")
    if not learned or not up:
        return ""
    rows = [f"| {t} | {learned[t]:.3f} | {up[t]:.3f} |"
            for t in sorted(set(learned) & set(up), key=int)]
    return ("\n\nBy step t (states after t actions; resampling acts at the early ones): AUC "
            "within (task, step) of the learned value (the largest training size above) and of "
            "the rollout ceiling, on the same held-out states.\n\n"
            "| step t | learned V_θ | rollout ceiling |\n|---|---|---|\n" + "\n".join(rows))


def describe_value(vp: dict[str, Any]) -> str:
    """A value stage's recorded params in words (its variant)."""
    parts = ["Bernoulli head" if vp.get("loss") == "bce" else "regression head"]
    if vp.get("calibration", "none") != "none":
        parts.append(f"{vp['calibration']} calibration")
    if vp.get("state_rollouts"):
        parts.append(f"{vp['state_rollouts']} more rollouts per state")
    if vp.get("targets") == "td":
        parts.append(f"TD(λ = {vp.get('td_lambda'):g}) targets")
    if vp.get("smc_states"):
        parts.append("plus AMC-visited states")
    return "; ".join(parts)


def quality_section(quality: dict[str, Any] | None, plots: Path | None, link: str) -> str:
    if quality is None:
        return ""
    rows = ["| training states | tasks | Pearson | AUC | AUC within (task, step) | ECE | Brier |",
            "|---|---|---|---|---|---|---|"]
    rows += [f"| {r['train_states']} | {r['train_tasks']} | {r['pearson']:.3f} | "
             f"{r['auc']:.3f} | {_num(r.get('auc_within'))} | {r['ece']:.3f} | "
             f"{r['brier']:.3f} |" for r in quality["curve"]]
    up = quality.get("ceiling")
    if up:  # the rollout value on the same held-out states: what the learned one aims at
        rows.append(f"| ceiling: Monte-Carlo rollout value (M = {up['rollouts']:g}) | – | "
                    f"{up['pearson']:.3f} | {up['auc']:.3f} | {_num(up.get('auc_within'))} | "
                    f"{up['ece']:.3f} | {up['brier']:.3f} |")
    if plots is not None:
        plot_quality(quality["curve"], plots / "value_quality.png")
    d = quality["data"]
    f = quality["final"]
    steps = _by_step_table(quality)
    which = (f"The value stage's current value (`sweeps/params.yaml`): "
             f"{describe_value(quality['params'])}. " if quality.get("params") else "")
    return ("## The learned value: quality vs dataset size\n\n" + which +
            f"Head-mode MiniLM (frozen encoder, cached features) on planner-mix rollouts of "
            f"train tasks (q ∈ {d['q_grid']}, {d['rollouts']} rollouts per task and q, budget "
            f"= plan + {d['slack']}); held-out {quality['held_out']} tasks. Final model "
            f"(all training states): test Pearson {f.get('test_pearson', float('nan')):.3f}, "
            f"AUC {f.get('test_auc', float('nan')):.3f}, AUC within (task, step) "
            f"{_num(f.get('test_auc_within'))}. *AUC within (task, step)* counts only pairs of "
            "states of one task at one step -- the choices resampling makes; the plain AUC "
            "also credits ranking easy tasks and early steps above hard and late ones.\n\n"
            + "\n".join(rows) + steps
            + f"\n\n![value quality]({link}/value_quality.png)\n")


def split_superseded(runs: list[dict[str, Any]], quality: dict[str, Any] | None
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(cells of the current learned value and value-free cells, cells of an earlier value).

    The current value is the quality record's ``model_hash``; a learned cell records the hash
    of the value it ran with. Without a recorded hash nothing is set apart.
    """
    current = (quality or {}).get("model_hash")
    if not current:
        return runs, []
    def earlier(r: dict[str, Any]) -> bool:
        return r["cell"]["value"] == "learned" and r.get("value_model_hash") != current

    return [r for r in runs if not earlier(r)], [r for r in runs if earlier(r)]


def superseded_section(old: list[dict[str, Any]], values: dict[str, dict[str, Any]]) -> str:
    """Every cell of an earlier learned value, with that value's quality (none dropped)."""
    if not old:
        return ""
    lines = ["## Superseded learned values (kept, not used above)\n",
             "Cells that ran with an earlier learned V_θ (named by its content hash; its quality "
             "from `evidence/values/<hash>.json`). They are not part of the tables, the best "
             "regime or the goal above, which use the current value only.\n",
             "| value | its held-out Pearson, AUC | split | setting | pairs (tasks) | "
             "AMC − BoN, oracle [95% CI], exact p | deployable selection |",
             "|---|---|---|---|---|---|---|"]
    for r in sorted(old, key=lambda r: (str(r.get("value_model_hash")), r["name"])):
        h = str(r.get("value_model_hash", "unrecorded"))
        f = values.get(h, {}).get("final", {})
        q = (f"{f['test_pearson']:.3f}, {f.get('test_auc', float('nan')):.3f}"
             if "test_pearson" in f else "not recorded")
        p, dep = compare(r), deployable(r)
        assert p is not None
        lines.append(f"| `{h}` | {q} | {r['cell']['split']} | {describe(r['cell'])} | "
                     f"{p.d.pairs} ({p.d.tasks}) | {fmt_diff(p)} | "
                     f"{fmt_diff(dep[1]) if dep else '–'} |")
    return "\n".join(lines) + "\n"
