"""The paper's Table 11 in miniature: GRPO's fine-tuned policy against AMC on the frozen one.

Inputs are two ``amc run`` summaries over the *same* environment, split, tasks and seeds -- one
with the frozen prior (ReAct, Best-of-N, AMC), one with the GRPO policy (the ``hf`` prior with
``adapter`` set: ReAct, Best-of-N) -- and ``amc grpo``'s ``metrics.json`` (training costs).
Every row shows success and reward with standard errors (the mean alone when there is none: one
task), the inference tokens per task, and the training compute its policy needed (none for the
frozen one). Summaries of different task sets are refused: a comparison over other tasks would
not be one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amc.reports.table import plus_minus

SAME = ("env", "split", "max_tasks", "task_ids", "seeds")
"""Config keys that must agree between the two runs."""


def _same_tasks(frozen: Mapping[str, Any], policy: Mapping[str, Any]) -> None:
    a, b = frozen.get("config") or {}, policy.get("config") or {}
    diff = [k for k in SAME if a.get(k) != b.get(k)]
    if diff:
        raise ValueError(f"the frozen and GRPO runs differ in {', '.join(diff)}: not comparable")


def _training(costs: Mapping[str, Any]) -> list[str]:
    wall, cpu, gpu = costs.get("wall_s", 0.0), costs.get("cpu_s", 0.0), costs.get("gpu_s", 0.0)
    return [f"{wall:.0f}", f"{cpu:.0f}", f"{gpu:.0f}", f"{costs.get('generated_tokens', 0)}"]


def grpo_table(frozen: Mapping[str, Any], policy: Mapping[str, Any],
               costs: Mapping[str, Any]) -> list[str]:
    """Markdown lines: the comparison table (frozen rows first, then GRPO's)."""
    _same_tasks(frozen, policy)
    head = ["policy", "method", "N", "runs", "success", "oracle reward", "inference tokens/task",
            "training wall s", "training CPU s", "training GPU s", "training tokens generated"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, summary, train in (("frozen", frozen, None), ("GRPO", policy, costs)):
        for row in summary["methods"]:
            name = row["method"]
            n = name.split("+")[0].partition("@")[2] or "1"
            cells = [label, f"`{name}`", n, str(row.get("runs", row.get("tasks", ""))),
                     plus_minus(row["success"], row.get("success_se")),
                     plus_minus(row["oracle_best"], row.get("oracle_best_se")),
                     f"{row['tokens_per_task']:.0f}",
                     *(_training(train) if train is not None else ["0", "0", "0", "0"])]
            out.append("| " + " | ".join(cells) + " |")
    return out


def grpo_section(frozen_path: Path, policy_path: Path, metrics_path: Path) -> list[str]:
    """The document section: where the numbers come from, the training curve's ends, the table."""
    frozen = json.loads(Path(frozen_path).read_text())
    policy = json.loads(Path(policy_path).read_text())
    metrics = json.loads(Path(metrics_path).read_text())
    costs = metrics.get("costs") or {}
    curve = _curve(Path(metrics_path).parent / "curve.jsonl")
    lines = ["\n## GRPO policy vs AMC on the frozen policy (Table 11 in miniature)\n",
             f"_From `{frozen_path}`, `{policy_path}` and `{metrics_path}`._\n"]
    if curve:
        first, last = curve[0], curve[-1]
        lines.append(f"- training: {len(curve)} GRPO rounds, {costs.get('rollouts', '?')} "
                     f"rollouts; mean group reward {first['mean_reward']:.3f} (first round) → "
                     f"{last['mean_reward']:.3f} (last); KL to the reference at the end "
                     f"{last['kl']:.4f}")
    lines += [f"- {x}" for x in _setting(frozen)]
    lines += ["", *grpo_table(frozen, policy, costs)]
    return lines


def _setting(frozen: Mapping[str, Any]) -> list[str]:
    """What both runs share, and which value the frozen SMC rows used (AMC only if learned)."""
    from amc.reports.run_summary import describe_config

    cfg = frozen.get("config") or {}
    value = (cfg.get("value") or {}).get("name", "none")
    model = ((cfg.get("value") or {}).get("options") or {}).get("model")
    what = (f"AMC (learned value `{model}`)" if value == "learned" else
            "SMC with the prior only (no value: not AMC)" if value == "none" else
            f"SMC with the `{value}` value")
    smc = [m["method"] for m in frozen.get("methods", []) if m["method"].startswith("smc")]
    return [*describe_config(cfg), *([f"frozen `{', '.join(smc)}`: {what}"] if smc else [])]


def _curve(path: Path) -> list[dict[str, float]]:
    if not path.is_file():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
