"""``docs/results.md`` generated from the pipeline's metrics, never written by hand.

Reads the report stage's ``summary.json`` (``report.summary_file``: per-method means and standard
errors over tasks -- seeds averaged within a task first -- of the deployable (value-selected,
reward-free) reward, the oracle best-of-pool, the max-final-weight reward (which uses the
reward), the weighted mean and success, tokens and dollars, value calibration, the promotion
decision), copies the report's plots and the summaries next to the document
(``<name>-assets/``) and writes tables plus a *reading* computed from the numbers: for every N
where both exist, AMC versus Best-of-N on the deployable and the oracle metric -- the paired
difference over (task, seed) with its 95% t interval over tasks and the exact sign-flip p
(:func:`amc.stats.sign_flip_p`) beside it, called a win or a loss only when both agree (the
interval excludes 0 and p < 0.05; a summary without the exact p is never called
separable; older summaries without intervals: beyond two combined standard errors); the
learned value versus the zero-shot one; AMC at N versus
Best-of-N at the largest N; an explicit statement when the prior produced no success at all
(then there is nothing for resampling to amplify), and when Best-of-N is already at the
ceiling or does not improve with N (then there is nothing left to gain).

Further configurations (for example the benchmark-faithful one, run with ``amc run``) are
added as extra sections from their ``summary.json``, each with its own table and reading; a
caller may also put its own sections first, as markdown files (``sections``) or as renderers
(``renderers``: a study's tables, e.g. ``studies/llm_regime/results_doc.py``).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from amc.reports.run_summary import describe_config, load_run_summary, upgrade_summary
from amc.reports.table import plus_minus
from amc.results import sessions_wall, write_json_atomic

METRICS = (("deployable_reward", "deployable (value-selected)"),
           ("oracle_best", "oracle best-of-pool"),
           ("max_weight_reward", "max final weight (uses the reward)"),
           ("weighted_mean_reward", "weighted mean"), ("success", "success (oracle)"))
ROLE_ORDER = ("react", "bon", "smc", "amc", "champion")
CEILING = 0.9  # Best-of-N success from which no method can show a clear gain

Renderer = Callable[[Path], tuple[list[str], list[Path]]]
"""A section a caller adds: given the document's assets folder (where it may copy what it
read), its markdown lines and the source files it read (listed in the document's header)."""


def _nan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _pm(m: Mapping[str, Any], k: str) -> str:
    """``mean ± s.e.``; ``n/a`` when not measured (no selection value), no s.e. for one task."""
    return plus_minus(m.get(k), m.get(k + "_se"))


def _table(methods: Mapping[str, Mapping[str, Any]]) -> str:
    head = ["method", "role", "N", "tasks", "runs", *(label for _, label in METRICS),
            "tokens/task", "$/task"]
    rows = sorted(methods.items(), key=lambda kv: (kv[1]["n"], ROLE_ORDER.index(kv[1]["role"])
                                                   if kv[1]["role"] in ROLE_ORDER else 99))
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, m in rows:
        out.append("| " + " | ".join([f"`{name}`", m["role"], str(m["n"]), str(m["tasks"]),
                                      str(m["runs"]), *(_pm(m, k) for k, _ in METRICS),
                                      f"{m['tokens_per_task']:.0f}",
                                      f"{m['cost_per_task']:.4f}"]) + " |")
    return "\n".join(out)


def _d(d: float) -> str:
    return "n/a" if math.isnan(d) else f"{d:+.3f}"


def _ci(row: Mapping[str, Any], k: str) -> str:
    """``Δ [lo, hi]`` of a paired row; n/a when not measured; the s.e. for older rows."""
    d, lo, hi, se = row.get(k), row.get(k + "_lo"), row.get(k + "_hi"), row.get(k + "_se")
    if _nan(d):
        return "n/a"
    if not _nan(lo) and not _nan(hi):
        p = row.get(k + "_p")
        return f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" + ("" if _nan(p) else f", p {p:.2g}")
    return f"{d:+.3f}" + ("" if _nan(se) else f" ± {se:.3f}")


def paired_table(paired: Mapping[str, Mapping[str, Any]]) -> str:
    """Each method minus Best-of-N at its N: paired mean difference and 95% t interval."""
    if not paired:
        return ""
    keys = [k for k, _ in METRICS if k != "weighted_mean_reward"]
    labels = dict(METRICS)
    out = ["| method | − baseline | pairs | tasks | " +
           " | ".join(f"Δ {labels[k]} [95%], exact p" for k in keys) + " |",
           "|" + "---|" * (4 + len(keys))]
    for name, row in paired.items():
        out.append(f"| `{name}` | `{row.get('baseline')}` | {row.get('runs')} | "
                   f"{row.get('tasks', '?')} | " + " | ".join(_ci(row, k) for k in keys) + " |")
    return "\n".join(out)


def _compare(a: Mapping[str, Any], b: Mapping[str, Any], k: str) -> tuple[float, str]:
    if _nan(a.get(k)) or _nan(b.get(k)):
        return math.nan, "not measured (no selection value)"
    d = a[k] - b[k]
    se = math.hypot(a.get(k + "_se", 0.0), b.get(k + "_se", 0.0))
    if se > 0 and abs(d) > 2 * se:
        return d, "better" if d > 0 else "worse"
    return d, "not separable (|Δ| ≤ 2 s.e.)" if se > 0 else "equal" if d == 0 else "one run"


def interval_verdict(lo: float, hi: float, p: float | None) -> str:
    """Separable only when the t interval and the exact sign-flip p agree (p < 0.05)."""
    if not (lo > 0 or hi < 0):
        return "not separable (95% interval includes 0)"
    if _nan(p):
        return "not called separable (the t interval excludes 0; no exact p recorded)"
    if p is not None and p >= 0.05:
        return f"not separable (the t interval excludes 0, the exact p = {p:.3g} does not)"
    return "better" if lo > 0 else "worse"


def _paired_line(n: int, label: str, name: str, bname: str, row: Mapping[str, Any],
                 k: str) -> str:
    d, se, lo, hi = (row.get(k + s, math.nan) for s in ("", "_se", "_lo", "_hi"))
    if _nan(d):
        return f"N = {n}, {label}: not measured (no selection value)."
    if not _nan(lo) and not _nan(hi) and se:
        p = row.get(k + "_p")
        exact = "" if _nan(p) else f", exact sign-flip p = {p:.3g}"
        return (f"N = {n}, {label}: `{name}` − `{bname}` = {d:+.3f} ± {se:.3f}, 95% interval "
                f"[{lo:+.3f}, {hi:+.3f}]{exact} (paired over {row['runs']} runs on "
                f"{row.get('tasks', '?')} tasks) → {interval_verdict(lo, hi, p)}.")
    if _nan(se):
        verdict = "one run"
    elif se == 0:
        verdict = "identical on every run" if d == 0 else ("better" if d > 0 else "worse") + \
            " on every run"
    elif abs(d) > 2 * se:
        verdict = "better" if d > 0 else "worse"
    else:
        verdict = "not separable (|Δ| ≤ 2 s.e.)"
    spread = f" ± {se:.3f}" if se else ""
    return (f"N = {n}, {label}: `{name}` − `{bname}` = {d:+.3f}{spread} (paired over "
            f"{row['runs']} runs) → {verdict}.")


def reading(methods: Mapping[str, Mapping[str, Any]],
            paired: Mapping[str, Mapping[str, Any]] | None = None,
            values: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Sentences computed from the numbers (see the module docstring).

    ``paired``: per-method differences to Best-of-N at the same N over the same (task, seed)
    runs (the report's ``paired``); used instead of the unpaired comparison when present.
    ``values``: AMC minus zero-shot SMC paired the same way, with each side's prior calls per
    run (the report's ``paired_values``); likewise preferred when present.
    """
    paired, values = paired or {}, values or {}
    by = {(m["role"], m["n"]): (name, m) for name, m in methods.items()}
    lines = []
    if all(m["success"] == 0 for m in methods.values()):
        lines.append("No method solved any task: the prior produced no successful trajectory, "
                     "so resampling had nothing to amplify and no method can separate.")
    for (role, n), (name, m) in sorted(by.items(), key=lambda kv: kv[0][1]):
        if role != "amc" or ("bon", n) not in by:
            continue
        bname, b = by[("bon", n)]
        for k, label in METRICS[:2]:
            row = paired.get(name)
            if row is not None and row.get("baseline") == bname and row["runs"]:
                lines.append(_paired_line(n, label, name, bname, row, k))
                continue
            d, verdict = _compare(m, b, k)
            lines.append(f"N = {n}, {label}: `{name}` − `{bname}` = {_d(d)} → {verdict}.")
        if ("smc", n) in by:
            zname, z = by[("smc", n)]
            row = values.get(name)
            if row is not None and row.get("baseline") == zname and row["runs"]:
                lines += [_paired_line(n, f"learned vs other value, {label}", name, zname, row, k)
                          for k, label in METRICS[:2]]
                lines.append(f"N = {n}, prior calls per run: `{name}` {row['calls']:.1f}, "
                             f"`{zname}` {row['baseline_calls']:.1f} (the other value's scores "
                             "are prior calls too).")
                continue
            d, verdict = _compare(m, z, "deployable_reward")
            lines.append(f"N = {n}, learned vs other value (`{zname}`), deployable: "
                         f"{_d(d)} → {verdict}.")
    bons = sorted(n for r, n in by if r == "bon")
    ceiling = [n for n in bons if by[("bon", n)][1]["success"] >= CEILING]
    if ceiling:
        n = ceiling[0]
        lines.append(f"Ceiling: Best-of-{n} already succeeds on "
                     f"{by[('bon', n)][1]['success']:.0%} of runs, so at N ≥ {n} AMC can at "
                     "most match it on these tasks; separating the methods there needs harder "
                     "tasks or a shorter step budget.")
    elif len(bons) > 1 and not all(m["success"] == 0 for m in methods.values()):
        lo, hi = by[("bon", bons[0])][1], by[("bon", bons[-1])][1]
        if hi["oracle_best"] - lo["oracle_best"] <= 1e-9:
            lines.append(f"Saturation: Best-of-N's oracle reward is {lo['oracle_best']:.3f} at "
                         f"N = {bons[0]} and {hi['oracle_best']:.3f} at N = {bons[-1]}: more "
                         "samples find no new success, so the tasks are all-or-nothing for this "
                         "prior (solved by a few samples, or out of reach) and resampling has "
                         "nothing to add; separating the methods needs a tighter step budget or "
                         "a task mix between these extremes.")
    if bons:
        big = by[("bon", bons[-1])][1]
        for (role, n), (name, m) in sorted(by.items(), key=lambda kv: kv[0][1]):
            if role == "amc" and n < bons[-1]:
                d, verdict = _compare(m, big, "oracle_best")
                lines.append(f"Scaling: `{name}` vs Best-of-{bons[-1]}, oracle: {_d(d)} → "
                             f"{verdict}.")
    return lines


def hours(seconds: float | None) -> str:
    if seconds is None:
        return "not recorded"
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def _extra_section(title: str, s: Mapping[str, Any], path: Path) -> list[str]:
    """A configuration run by ``amc run``: its settings, table and reading."""
    return [f"\n## {title}\n", f"_From `{path}`; wall time {hours(s.get('wall_s'))}._\n",
            *run_body(s)]


def run_body(s: Mapping[str, Any]) -> list[str]:
    """A run's settings, table, paired differences and reading."""
    return [*(f"- {x}" for x in describe_config(s.get("config"))), "", _table(s["methods"]),
            *_paired_block(s.get("paired")),
            "", *(f"- {x}" for x in reading(s["methods"], s.get("paired"), s.get("paired_values")))]


def _paired_block(paired: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """The paired-difference table with its heading line (nothing without pairs)."""
    if not paired:
        return []
    return ["", "Paired differences to Best-of-N at the same N, over (task, seed), averaged "
            "within a task; 95% Student-t interval over tasks:", "", paired_table(paired)]


def with_wall(s: Mapping[str, Any]) -> Mapping[str, Any]:
    """A pipeline summary with the evaluation's wall time: since issue 63 it is not in the
    summary (whose bytes a rerun reproduces) but in the evaluation folder's
    ``timing/sessions.jsonl`` (:func:`amc.results.sessions_wall`), read when it is here."""
    out_dir = ((s.get("config") or {}).get("evaluate") or {}).get("out_dir")
    if s.get("wall_s") is not None or not out_dir:
        return s
    wall, n = sessions_wall(out_dir)
    return {**s, "wall_s": wall, "sessions": n} if n else s


def _pipeline_section(s: Mapping[str, Any], intro: str | None, pngs: list[Path],
                      assets: Path) -> list[str]:
    """The pipeline's evaluation: settings, table, reading, calibration, promotion, plots."""
    cal = s.get("calibration") or {}
    pr = s.get("promotion") or {}
    parts = [
        f"Environment: **{s.get('env', '?')}**; evaluation status: "
        f"**{s.get('eval_status', '?')}**. Means ± standard errors over tasks (seeds averaged "
        "within a task first). *Deployable* is the pool trajectory the selection value scores "
        "highest at its last pre-terminal state, rewards masked -- an answer a deployed agent "
        "could pick (n/a: no selection value configured); *oracle* is the paper's best-of-pool "
        "by true reward; *max final weight* picks the largest final weight, which contains "
        "R/β, so it uses the reward (for ReAct and Best-of-N it is the oracle). All are "
        "computed over the same pool for every method.\n",
        *([intro, ""] if intro else []),
        *(f"- {x}" for x in describe_config(s.get("config"))),
        f"- evaluation wall time: {hours(s.get('wall_s'))} over {s.get('sessions') or '?'} "
        "session(s)\n" if s.get("wall_s") is not None else "",
        _table(s["methods"]), *_paired_block(s.get("paired")), "\n## Reading\n",
        *(f"- {x}" for x in reading(s["methods"], s.get("paired"), s.get("paired_values"))),
    ]
    if cal:
        nan = float("nan")
        parts.append(f"\nValue calibration on {cal.get('states')} states: Pearson "
                     f"{cal.get('pearson') if cal.get('pearson') is not None else nan:.3f}, "
                     f"MAE {cal.get('mae', nan):.3f}.")
    if pr:
        parts.append(f"\nPromotion: {'promoted' if pr.get('promote') else 'kept'} "
                     f"({pr.get('reason')}); champion = version {pr.get('champion_after')}.")
    if pngs:
        parts.append("\n## Plots\n")
        parts += [f"![{p.stem}]({assets.name}/{p.name})" for p in pngs]
    return parts


def _copy(src: Path, dst: Path) -> None:
    """Copy beside the document; nothing to do when regenerating from the copies themselves."""
    if not (dst.exists() and src.resolve() == dst.resolve()):
        shutil.copy2(src, dst)


def write_results_doc(summary_file: str | Path | None, plots_dir: str | Path, out: str | Path,
                      *, title: str = "Results", command: str = "amc results-doc",
                      extra: Sequence[tuple[str, str | Path]] = (),
                      intro: str | None = None,
                      grpo: tuple[Path, Path, Path] | None = None,
                      summary_title: str | None = None,
                      sections: Sequence[tuple[str, Path]] = (),
                      renderers: Sequence[Renderer] = ()) -> Path:
    """Write the results document (and copy the plots beside it); returns its path.

    ``summary_file`` is the pipeline report's summary (None: only the ``extra`` sections);
    ``extra`` adds ``(title, summary.json of amc run)`` sections; ``intro`` is a paragraph
    placed under the title (e.g. why this configuration was chosen); ``grpo`` adds the GRPO
    comparison (:mod:`amc.reports.grpo_table`: frozen run, GRPO-policy run, training metrics);
    ``summary_title`` heads the pipeline summary's section (needed when others come first);
    ``sections`` = ``(title, markdown file)`` pairs put first, verbatim (a study's own generated
    table, e.g. a regime search), then each of ``renderers``' sections (:data:`Renderer`).
    """
    if (summary_file is None and not extra and grpo is None and not sections
            and not renderers):
        raise ValueError("nothing to report: no pipeline summary and no extra sections")
    out = Path(out)
    # Plots and the summaries themselves travel with the document: it stays readable and
    # checkable after metrics/ is overwritten by the next run.
    assets = out.parent / (out.stem + "-assets")
    assets.mkdir(parents=True, exist_ok=True)
    sources = [Path(p) for p in ([summary_file] if summary_file is not None else [])]
    if summary_file is not None:
        _copy(Path(summary_file), assets / "summary.json")
    runs = []
    for i, (sec_title, path) in enumerate(extra):
        slug = re.sub(r"[^a-z0-9]+", "-", sec_title.lower()).strip("-")[:40] or f"extra-{i}"
        run = load_run_summary(Path(path))
        write_json_atomic(assets / f"{slug}.json", run)  # with roles and paired rows
        runs.append((sec_title, run, Path(path)))
        sources.append(Path(path))
    first = []
    for sec_title, md in sections:
        first += [f"\n## {sec_title}\n", f"_From `{md}`._\n", Path(md).read_text().strip(), ""]
        sources.append(Path(md))
    for render in renderers:
        lines, read = render(assets)
        first += lines
        sources += read
    parts = [f"# {title}\n",
             f"_Generated by `{command}` from {', '.join(f'`{s}`' for s in sources)} "
             f"(copied to `{assets.name}/`) on "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; do not edit by hand._\n"]
    parts += first
    if summary_file is not None:
        if summary_title:
            parts.append(f"\n## {summary_title}\n")
        pngs = sorted(Path(plots_dir).glob("*.png")) if Path(plots_dir).is_dir() else []
        for p in pngs:
            _copy(p, assets / p.name)
        parts += _pipeline_section(with_wall(upgrade_summary(json.loads(
                                       Path(summary_file).read_text()))),
                                   intro, pngs, assets)
    elif intro:
        parts += [intro, ""]
    for sec_title, run, path in runs:
        parts += _extra_section(sec_title, run, path)
    if grpo is not None:
        from amc.reports.grpo_table import grpo_section

        parts += grpo_section(*grpo)
    out.write_text("\n".join(parts) + "\n")
    return out
