"""Run summaries as the results document reads them: ``amc run``'s ``summary.json`` or a
resolved copy in ``<doc>-assets/``, with roles (react / bon / smc / amc), N, today's metric
names (older copies carry legacy names) and the paired differences to Best-of-N; plus the
bullet lines that describe a run's configuration."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amc.smc.scoring import upgrade_metric_keys


def upgrade_summary(s: Mapping[str, Any]) -> dict[str, Any]:
    """A summary whose method rows (and paired rows) use today's metric names (rows keyed by
    method in the pipeline's summary, a list in ``amc run``'s)."""
    ms = s["methods"]
    return {**s, "methods": [upgrade_metric_keys(m) for m in ms] if isinstance(ms, list) else
            {k: upgrade_metric_keys(m) for k, m in ms.items()},
            "paired": {k: upgrade_metric_keys(r) for k, r in (s.get("paired") or {}).items()}}


def _resolved_options(prior: str | None, options: Mapping[str, Any]) -> dict[str, Any]:
    """The prior's options with its registered defaults filled in (model, prompt style)."""
    from amc.registry import PRIORS, load_builtin_components

    try:
        load_builtin_components()
        model = PRIORS.validate(prior or "", options)
    except (KeyError, ValueError, ImportError):
        return dict(options)
    return model.model_dump(mode="json") if model is not None else dict(options)


def _role(name: str, cfg: Mapping[str, Any]) -> str:
    """react / bon / amc (a learned value) / smc (any other value) for an ``amc run`` spec."""
    kind, _, rest = name.partition("@")
    if kind in ("react", "bon"):
        return kind
    _, plus, value_key = rest.partition("+")
    value = (cfg.get("values") or {}).get(value_key) if plus else cfg.get("value")
    return "amc" if (value or {}).get("name") == "learned" else "smc"


def describe_config(cfg: Mapping[str, Any] | None) -> list[str]:
    """Bullet lines for the settings a reader needs (env, prior, horizon, tasks, values)."""
    if not cfg:
        return []
    env, prior, smc = cfg.get("env") or {}, cfg.get("prior") or {}, cfg.get("smc") or {}
    po = _resolved_options(prior.get("name"), prior.get("options") or {})
    model = po.get("model") or "default"
    lines = [
        f"environment `{env.get('name')}` with options `{json.dumps(env.get('options') or {})}`",
        f"prior `{prior.get('name')}` (model `{model}`, prompt `{po.get('prompt', 'default')}`)",
        f"at most {smc.get('max_steps')} steps per particle; resampling "
        f"`{smc.get('resample')}` at steps {smc.get('resample_steps')} with "
        f"`{smc.get('resampler')}`; β = {smc.get('beta')}",
    ]
    ev = cfg.get("evaluate")
    if ev:
        zs = (ev.get("zero_shot_value") or {}).get("name")
        which = (f"the tasks listed in `{ev['tasks_file']}`" if ev.get("tasks_file") else
                 f"split `{ev.get('split')}`, first {ev.get('max_tasks') or 'all'} tasks")
        lines.append(f"{which}, "
                     f"seeds {ev.get('seeds')}, N ∈ {ev.get('n_grid')}; plain smc value "
                     f"`{zs}` at N ∈ {ev.get('smc_n_grid') or ev.get('n_grid')}")
    else:
        tasks = cfg.get("task_ids") or f"first {cfg.get('max_tasks') or 'all'}"
        lines.append(f"split `{cfg.get('split')}`, tasks {tasks}, seeds {cfg.get('seeds')}, "
                     f"methods {cfg.get('methods')}")
    return lines


def _method_rows(s: Mapping[str, Any], path: Path) -> tuple[dict[str, dict[str, Any]], bool]:
    """``{name: row with role and n}`` of a summary and whether it was resolved already.

    Two shapes are read: ``amc run``'s (``methods`` a list of rows, each with its ``method``)
    and the resolved copy this module writes to ``<doc>-assets/`` (``methods`` keyed by name,
    each row with its ``role`` and ``n``; older copies carry legacy metric names, mapped by
    :func:`upgrade_summary`). Anything else is refused: a guessed reading would be a made-up
    table.
    """
    ms = s.get("methods")
    cfg = s.get("config") or {}
    if isinstance(ms, list) and ms and all(isinstance(r, Mapping) and "method" in r for r in ms):
        methods = {}
        for row in ms:
            name = row["method"]
            n = name.split("+")[0].partition("@")[2]
            methods[name] = {"role": _role(name, cfg), "n": int(n or 1), **row}
        return methods, False
    if isinstance(ms, Mapping) and ms and all(
            isinstance(r, Mapping) and "role" in r and "n" in r for r in ms.values()):
        return {name: {**r, "method": name} for name, r in ms.items()}, True
    raise ValueError(f"{path}: not a run summary: 'methods' must be a list of rows with "
                     "'method' (amc run) or a mapping of method -> row with 'role' and 'n'")


def load_run_summary(path: Path) -> dict[str, Any]:
    """An ``amc run`` summary (or a resolved copy from ``<doc>-assets/``) with roles, N and --
    when its results files sit beside it -- the paired differences to Best-of-N (the same
    statistic as the pipeline's report); a resolved copy without them keeps its stored pairs."""
    from amc.reports.paired import paired_to_bon
    from amc.results import read_task_records, results_path
    from amc.smc.records import TaskResult

    raw = json.loads(path.read_text())
    if not isinstance(raw, Mapping):
        raise ValueError(f"{path}: not a run summary: a JSON object is expected")
    methods, resolved = _method_rows(raw, path)
    s = upgrade_summary({**raw, "methods": methods})
    methods = s["methods"]
    cfg = s.get("config") or {}
    results = {f"{name}#{seed}": [TaskResult.from_dict(r) for r in read_task_records(
        results_path(path.parent, name, seed))] for name in methods for seed in cfg.get(
        "seeds") or ()}
    if any(results.values()):
        paired = paired_to_bon(methods, results)
    else:
        paired = s["paired"] if resolved else {}
    return {**s, "methods": methods, "paired": paired}
