"""The per-benchmark sections of ``docs/evidence.md``: summary table, WebShop, SciWorld, notes.

Every number comes from committed cell records (``evidence/runs/``) through
:mod:`studies.sweeps.select` (paired AMC - Best-of-N over tasks), :mod:`studies.sweeps.hidden`
(selections where the reward is hidden) and :mod:`studies.sweeps.signflip`; the regime a row
reports is picked by the declared choice rule (:mod:`studies.sweeps.grid` for WebShop and
SciWorld, :func:`studies.sweeps.report.best_regime` for TextCraft) on validation cells; a ceiling
without validation cells is the declared one (:data:`studies.sweeps.grid.CEILINGS`). SciWorld's
measured costs come from ``evidence/sciworld_cost.json`` (steps, menus, forks) and
``evidence/sciworld_rollout_cost.json`` (rollout-value pairs, under the key ``rollout``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from studies.sweeps import grid
from studies.sweeps.bench_values import superseded_note, value_note
from studies.sweeps.celltable import bench_of, cell_table, p_value, setting, sign_flip
from studies.sweeps.config import recorded_cell
from studies.sweeps.hidden import LABEL, selection_summary
from studies.sweeps.plots import plot_bench_beta, plot_bench_q
from studies.sweeps.report import _twin, best_regime, fmt_diff
from studies.sweeps.select import VALUE_LABEL, compare, selection_loss
from studies.sweeps.stats import Paired

PRIOR = {"textcraft": "planner-mix (optimal planner)",
         "webshop": "planner-mix (oracle planner)",
         "sciworld": "planner-mix (gold path, open loop)"}
SUMMARY_HEAD = ("| benchmark | prior | value | regime (chosen on validation) | Best-of-N | "
                "AMC − BoN on test [95% CI] | sign-flip p | ceiling (rollout value) | "
                "selection loss AMC / BoN |\n|---|---|---|---|---|---|---|---|---|")


def twin_on_test(runs: list[dict[str, Any]], rec: dict[str, Any], **change: Any
              ) -> dict[str, Any] | None:
    """The test record of a fixed-budget benchmark's validation record (keys in ``change``
    replaced), or None when it has not run."""
    want = {**{k: rec["cell"][k] for k in ("q", "n", "beta", "value")}, **change}
    final = recorded_cell(rec["cell"]).rollout_final  # WebShop: with or without the buy
    return next((r for r in grid.of_bench(runs, bench_of(rec), "test")
                 if all(r["cell"][k] == v for k, v in want.items())
                 and recorded_cell(r["cell"]).rollout_final == final), None)


def _row(bench: str, value: str, regime: str, test: dict[str, Any] | None,
         ceiling: Paired | None, loss: str) -> str:
    p = compare(test) if test is not None else None
    cells = [bench, PRIOR[bench], VALUE_LABEL[value], regime,
             f"{p.a:.3f}" if p else "–", fmt_diff(p) if p else "test cell not run yet",
             p_value(test) if test is not None and p else "–", fmt_diff(ceiling), loss]
    return "| " + " | ".join(cells) + " |"


def textcraft_rows(runs: list[dict[str, Any]]) -> list[str]:
    best = best_regime(runs)
    if best is None:
        return []
    rec, chosen = best
    twin = _twin(runs, rec, "rollout")
    sl = selection_loss(rec)
    loss = (f"{sl.b:.3f} / {sl.a:.3f} (deployable; success observable: 0 for 'any finished')"
            if sl else "–")
    regime = setting(rec["cell"]) + ("" if chosen else " (no validation cells: best on test)")
    return [_row("textcraft", "learned", regime, rec, compare(twin) if twin else None, loss)]


def regimes(runs: list[dict[str, Any]], bench: str
            ) -> list[tuple[str, dict[str, Any], dict[str, Any] | None, Paired | None]]:
    """(value, chosen validation record, its test twin, ceiling at the same q and N) of every
    value of ``bench`` with a chosen regime."""
    out = []
    for value in grid.GRIDS[bench].values:
        best = grid.best_regime(runs, bench, value)
        if best is None:
            continue
        ceiling_val = best if value == "rollout" else grid.best_regime(runs, bench, "rollout")
        q, n = best["cell"]["q"], best["cell"]["n"]
        # another value's ceiling: the declared ceiling cell once it has run (WebShop's with
        # the forced buy), else the rollout value's chosen test twin at the same (q, N)
        c = None if value == "rollout" else grid.ceiling_record(runs, bench, q, n)
        if c is None and ceiling_val is not None:
            c = twin_on_test(runs, ceiling_val, q=q, n=n)
        out.append((value, best, twin_on_test(runs, best), compare(c) if c is not None else None))
    return out


def fixed_budget_rows(runs: list[dict[str, Any]], bench: str) -> list[str]:
    out = []
    for value, best, test, ceiling in regimes(runs, bench):
        loss = "–"
        if test is not None:
            mode = next((s for s in selection_summary(test["rows"])
                         if s["selection"] == "mode_reward"), None)
            if mode:
                loss = f"{mode['loss_amc'][0]:.3f} / {mode['loss_bon'][0]:.3f} (most likely)"
        out.append(_row(bench, value, setting(best["cell"]), test, ceiling, loss))
    return out


def separable(p: Paired | None, flip_p: float) -> bool:
    """A gain counts only when the interval excludes 0 and the sign-flip p is below 0.05."""
    return p is not None and (p.d.lo > 0 or p.d.hi < 0) and flip_p < 0.05


def no_gain_note(runs: list[dict[str, Any]], bench: str) -> str:
    """Per chosen regime whose test difference is not separable, the measured reason: how
    much room Best-of-N leaves, and what the rollout ceiling gains at the same q and N."""
    parts = []
    for value, _, test, ceiling in regimes(runs, bench):
        p = compare(test) if test is not None else None
        if test is None or p is None or separable(p, sign_flip(test).p):
            continue
        why = f"Best-of-N already scores {p.a:.3f} of at most 1 (room {1 - p.a:.3f})"
        if ceiling is not None and value != "rollout":
            lack = ("without a value, resampling reads only the rewards paid so far"
                    if value == "none" else "this value does not rank states well enough")
            kind = (f"so a value could gain there: {lack}" if ceiling.d.lo > 0
                    else "so even the upper bound's gain is not separable at this setting")
            why += f"; the rollout upper bound at the same q and N gains {fmt_diff(ceiling)}, "
            why += kind
        parts.append(f"with {VALUE_LABEL[value] if value != 'none' else 'no value'} "
                     f"{fmt_diff(p)}: {why}")
    return (f"\n{NAME[bench]}, where AMC does not gain on test (interval containing 0 or "
            "sign-flip p ≥ 0.05): " + "; ".join(parts) + ".") if parts else ""


def summary_section(runs: list[dict[str, Any]], cost: dict[str, Any] | None) -> str:
    """The table at the top: one row per (benchmark, value) with a chosen regime."""
    rows = textcraft_rows([r for r in runs if bench_of(r) == "textcraft"])
    rows += fixed_budget_rows(runs, "webshop") + fixed_budget_rows(runs, "sciworld")
    lines = ["## Per-benchmark summary\n",
             "Regime chosen on validation cells by the declared rule, reported on its test "
             "cell: AMC − Best-of-N on the oracle best-of-pool score (TextCraft: success; "
             "WebShop: the graded score), 95% t interval over tasks, sign-flip p over tasks "
             "(exact up to 20 tasks, else 10⁵ seeded flips: MC). Ceiling: the rollout "
             "upper-bound value at the same q and N. Selection loss: oracle − selected, "
             "without reading the reward.\n", SUMMARY_HEAD, *rows]
    for bench in ("webshop", "sciworld"):
        done, declared = len(grid.of_bench(runs, bench, "validation")), len(
            grid.candidates(bench))
        if done:
            lines.append(f"\n{bench}: {done} of {declared} declared validation cells run; a "
                         "setting is chosen once every declared β of it has run.")
        lines += [x for x in (no_gain_note(runs, bench),) if x]
    ran = grid.of_bench(runs, "sciworld", "validation") or grid.of_bench(runs, "sciworld", "test")
    if cost or not ran:
        lines.append("\nSciWorld: " + ("" if ran else "no cell run yet. ")
                     + sciworld_cost_sentence(cost))
    return "\n".join(lines) + "\n"


def pair_seconds(cost: dict[str, Any], n: int, budget: int, every: int) -> float:
    """Estimated seconds of one SciWorld (task, seed) pair without a value: both methods pay
    a menu and a step per particle step; AMC pays about N/2 forks per resampling."""
    med = {k: sorted(cost[k])[len(cost[k]) // 2] for k in ("menu", "fork", "step")}
    resamplings = max(0, (budget - 1) // every)
    return 2 * n * budget * (med["menu"] + med["step"]) + resamplings * n / 2 * med["fork"]


def sciworld_cost_sentence(cost: dict[str, Any] | None) -> str:
    if not cost:
        return ""
    med = {k: sorted(cost[k])[len(cost[k]) // 2] for k in ("menu", "fork", "step")}
    g = grid.GRIDS["sciworld"]
    b, every, n = g.base["budget"], g.base["every"], g.n[0]
    pair = pair_seconds(cost, n, b, every)
    pairs = {s: len(seeds) for s, seeds in g.seeds.items()}
    return (f"Measured per-step cost ({cost['conditions']}; pool of {cost['pool_size']} JVMs; "
            "docs/benchmarks.md has a quieter machine's figures): action menu "
            f"{med['menu']:.2f} s (median, {cost['menu_len']} actions), step "
            f"{med['step']:.2f} s, verified-replay fork {med['fork']:.1f} s, gold path "
            f"{cost['gold_s_per_task']:.1f} s per game. So one (task, seed) pair of the "
            f"declared cells (N = {n}, budget {b}, resampling every {every}, no value) costs "
            f"about {pair:.0f} s at these figures ({pairs['validation']} seed(s) per "
            f"validation task, {pairs['test']} per test task). " + rollout_cost_sentence(cost))


def cell_seconds(rollout: dict[str, Any], cell: dict[str, Any]) -> float:
    """A ceiling cell's estimated seconds: per measured test game, its measured pair (Best-of-N
    and AMC with the rollout value, one seed, at the cell's q) times the cell's seeds."""
    run = next((r for r in rollout["runs"] if r["q"] == cell["q"]), None)
    if run is None:
        raise ValueError(f"no measured rollout-value pairs at q = {cell['q']}")
    return len(cell["seeds"]) * sum(r["bon"]["wall_s"] + r["amc"]["wall_s"]
                                    for r in run["pairs"])


def _run_sentence(r: dict[str, Any]) -> str:
    amc = sorted(x["amc"]["wall_s"] for x in r["pairs"])
    bon = sorted(x["bon"]["wall_s"] for x in r["pairs"])
    calls = [x["amc"]["calls"] / x["bon"]["calls"] for x in r["pairs"]]
    solved = sum(x["bon"]["oracle_best"] >= 1 - 1e-9 for x in r["pairs"])
    return (f"at q = {r['q']:g} ({r['conditions']}; {len(r['pairs'])} test games, one seed) "
            f"AMC with the rollout value takes {amc[len(amc) // 2]:.0f} s per (task, seed) "
            f"pair (median; {amc[0]:.0f}–{amc[-1]:.0f} s), Best-of-N {bon[len(bon) // 2]:.0f} "
            f"s, with {min(calls):.1f}–{max(calls):.1f}× Best-of-N's prior calls (the "
            f"rollouts' turns), and Best-of-N's best-of-pool score is 1 in {solved} of "
            f"{len(r['pairs'])} of these pairs")


def rollout_cost_sentence(cost: dict[str, Any]) -> str:
    """What a SciWorld rollout-value pair costs (``evidence/sciworld_rollout_cost.json``) and
    what the declared ceiling cells (:data:`studies.sweeps.grid.CEILINGS`) come to."""
    rollout = cost.get("rollout")
    runs = [r for r in (rollout or {}).get("runs", []) if r["pairs"]]
    if not runs:
        return ("A rollout value pays, for every particle state it scores, M rollouts of up to "
                "the remaining steps, each step a menu and a step and each rollout a fork "
                "(not measured yet).")
    r0 = runs[0]
    cells = grid.CEILINGS["sciworld"]
    qs = ", ".join(f"{c['q']:g}" for c in cells)
    head = (f"The rollout value forks every state it scores through the environment's restore "
            f"(one verified replay per rollout). Measured at N = {r0['n']}, M = "
            f"{r0['rollouts']}, budget {r0['budget']}, every {r0['every']}: "
            + "; ".join(_run_sentence(r) for r in runs) + ". ")
    measured = {(r["q"], r["n"]) for r in runs}
    sized = [c for c in cells if (c["q"], c["n"]) in measured]
    if not sized:
        return head + (f"The declared ceiling cells (q = {qs}) cannot be sized yet: no "
                       "measured rollout-value pairs at their q.")
    total = sum(cell_seconds({"runs": runs}, c) for c in sized)
    rest = [f"q = {c['q']:g} (N = {c['n']})" for c in cells
            if (c["q"], c["n"]) not in measured]
    return head + (f"So the {len(sized)} declared ceiling cells at q = "
                   f"{', '.join(format(c['q'], 'g') for c in sized)} (every test game, "
                   f"{len(cells[0]['seeds'])} seeds, β = {cells[0]['beta']:g} fixed without "
                   f"validation) come to about {total / 60:.0f} min at these figures"
                   + (f"; those at {', '.join(rest)} are not sized (no measured pairs at "
                      "that q and N)." if rest else "."))


def webshop_section(runs: list[dict[str, Any]]) -> str:
    """Every WebShop cell and the reward-free selections of the test cells."""
    val, test = (grid.of_bench(runs, "webshop", s) for s in ("validation", "test"))
    if not val and not test:
        return ""
    chosen = {id(r) for r in grid.choose(runs, "webshop")}
    out = ["## WebShop: AMC vs Best-of-N on the graded score\n",
           "The fixture catalog that ships with the project (198 generated goals; test = "
           "goals 5..54, validation = 48 train goals), the graded score (attribute, "
           "option, type and price match), one budget for every task. "
           + validation_sample_note(val) + rollout_final_note(val + test) + " ✓: chosen on "
           "validation. Reproduce: `cd sweeps && bash queue_bench.sh validation webshop && "
           "dvc queue start -j 1`, `python -m studies.sweeps.harvest --repo .. --out ../evidence`, "
           "then `bash queue_bench.sh test webshop` (the test twins of the chosen cells) and "
           "again; `python -m studies.sweeps.evidence` from the root.\n",
           *cell_table([*val, *test], chosen, lambda r: " (tail)" if is_tail(r) else "",
                       success=True)]
    out.append(hidden_tables(test or val))
    return "\n".join(out) + "\n"


def is_tail(rec: dict[str, Any]) -> bool:
    """A validation record whose tasks were the train list's id tail (no ``val_sample``)."""
    return rec["cell"]["split"] == "validation" and recorded_cell(rec["cell"]).val_sample == "tail"


def rollout_final_note(recs: list[dict[str, Any]]) -> str:
    """How many rollout-value cells ran with rollouts that stop before WebShop's forced buy
    (``cell.rollout_final: false``, every cell recorded before the key) and how many with it."""
    roll = [recorded_cell(r["cell"]) for r in recs if r["cell"]["value"] == "rollout"]
    before = sum(not c.rollout_final for c in roll)
    if not roll:
        return ""
    if not before:
        return (f" Every one of the {len(roll)} rollout-value cells ends its rollouts with the "
                "forced buy, as the driver ends a particle.")
    return (f" {before} of the {len(roll)} rollout-value cells ran with rollouts that stop "
            "before the forced buy the driver steps after the last step (`cell.rollout_final: "
            "false`, declared so in the grid): from a state whose episode would end on an item "
            "page their rollouts score 0 where the episode is scored, so this 'upper bound' can "
            "read low; "
            + ("no cell with the buy (`-ff`) has run yet." if before == len(roll) else
               f"{len(roll) - before} ran with it."))


def validation_sample_note(val: list[dict[str, Any]]) -> str:
    """Which validation cells ran on the id tail and which on the seeded random sample, and
    the settings whose betas were compared across the two samples."""
    tail = [r for r in val if is_tail(r)]
    if not tail:
        return "The validation goals are a seeded random sample of train (`val_sample: random`)."
    mixed: dict[str, dict[bool, list[str]]] = {}
    for r in val:
        c = r["cell"]
        key = f"q = {c['q']:g}, N = {c['n']}, {VALUE_LABEL[c['value']]}"
        mixed.setdefault(key, {True: [], False: []})[is_tail(r)].append(f"{c['beta']:g}")
    both = [f"{k} (β {', '.join(sorted(v[True]))} on the tail, {', '.join(sorted(v[False]))} "
            "on the sample)" for k, v in mixed.items() if v[True] and v[False]]
    return (f"Validation goals: {len(tail)} of the {len(val)} validation cells (marked tail, "
            "records from before `val_sample` existed) ran on the train list's last 48 ids -- "
            "the id order, not a random sample; the other "
            f"{len(val) - len(tail)} on a seeded random sample (`val_sample: random`, seed 0), "
            "as every later cell does. "
            + (f"The choice rule compared β across the two samples for {'; '.join(both)}."
               if both else ""))


def hidden_tables(recs: list[dict[str, Any]]) -> str:
    """Selections where the reward is hidden, per record (test cells; validation if none)."""
    out = ["\n### WebShop: selections where the reward is hidden\n",
           "Every finished episode ends with a purchase and the score is computed from the "
           "goal's hidden annotation, so a deployed agent cannot read it. Per cell: the "
           "selected answer's score for both methods and the selection loss (oracle − "
           "selected, 95% interval over tasks); deployable (value-selected) needs a learned "
           "value and is – in rollout and no-value cells. See `studies/sweeps/hidden.py` for "
           "the exact rules.\n",
           "| cell | selection | Best-of-N | AMC | loss BoN [95% CI] | loss AMC [95% CI] | "
           "AMC − BoN [95% CI] | sign-flip p |", "|---|---|---|---|---|---|---|---|"]
    for r in recs:
        for s in selection_summary(r["rows"]):
            lb, la, d = s["loss_bon"], s["loss_amc"], s["diff"]
            out.append(f"| {r['cell']['split']}: {setting(r['cell'])} | {LABEL[s['selection']]} "
                       f"| {s['bon']:.3f} | {s['amc']:.3f} | {lb[0]:.3f} [{lb[1]:.3f}, "
                       f"{lb[2]:.3f}] | {la[0]:.3f} [{la[1]:.3f}, {la[2]:.3f}] | "
                       f"{d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}] | {s['p']} |")
    return "\n".join(out) + "\n"


TEXTCRAFT_NOTE = (
    "## TextCraft: success is observable\n\n"
    "A TextCraft episode ends exactly when the goal item is crafted (or the budget runs out), "
    "so finished = success: the rule \"pick any trajectory that terminated\" equals the "
    "oracle, and the oracle best-of-pool *is* what a deployed agent gets. The deployable "
    "selection there only measures whether the value ranks a finished trajectory's "
    "pre-terminal state above an unfinished one's last state; its loss is not a cost a "
    "deployed agent must pay. The selection question is real where the reward is hidden "
    "(WebShop, above).\n")


def bench_sections(runs: list[dict[str, Any]], plots: Path | None = None,
                   link: str = "evidence", values: dict[str, dict[str, Any]] | None = None,
                   superseded: list[dict[str, Any]] | None = None) -> list[str]:
    """The sections after the summary: WebShop's tables (and its plot, drawn under ``plots``
    when given, linked as ``link/``; its learned values' quality from ``values``) and the
    TextCraft note."""
    web = webshop_section(runs)
    note = value_note(runs, values or {}, "webshop")
    if web and note:
        web += "\n" + note + "\n"
    cells = [*grid.of_bench(runs, "webshop", "validation"), *grid.of_bench(runs, "webshop",
                                                                           "test")]
    if web and any(r["cell"]["value"] == "rollout" for r in cells):
        if plots is not None:
            plot_bench_beta(cells, "WebShop", plots / "webshop_gain_vs_beta.png")
        web += f"\n![WebShop gain vs beta]({link}/webshop_gain_vs_beta.png)\n"
    return [web, sciworld_section(runs, plots, link, values or {}, superseded or []),
            TEXTCRAFT_NOTE]


def sciworld_section(runs: list[dict[str, Any]], plots: Path | None, link: str,
                     values: dict[str, dict[str, Any]], superseded: list[dict[str, Any]]) -> str:
    """SciWorld's plot of its test cells against q (drawn under ``plots`` when given), its
    learned values' quality and the superseded cells (empty: no SciWorld test cell)."""
    test = grid.of_bench(runs, "sciworld", "test")
    if not test:
        return ""
    cells = [*grid.of_bench(runs, "sciworld", "validation"), *test]
    chosen = {id(r) for r in grid.choose(runs, "sciworld")}
    text = ["\n## SciWorld\n", f"![SciWorld gain vs q]({link}/sciworld_gain_vs_q.png)",
            "Every cell (✓: chosen on validation; ceilings: the declared rollout-value test "
            "cells), AMC − Best-of-N on the oracle best-of-pool score:\n\n"
            + "\n".join(cell_table(cells, chosen))]
    if plots is not None:
        plot_bench_q(test, "SciWorld", plots / "sciworld_gain_vs_q.png")
    text += [x for x in (value_note(runs, values, "sciworld"),
                         superseded_note(superseded, "sciworld")) if x]
    return "\n\n".join(text) + "\n"


NAME = {"textcraft": "TextCraft", "webshop": "WebShop", "sciworld": "SciWorld"}
SCORE = {"textcraft": "success", "webshop": "graded score", "sciworld": "score"}


def tasks_seeds(rec: dict[str, Any]) -> str:
    """``14 tasks × 2 seeds`` of a record's rows (the t interval is over the tasks, not the
    (task, seed) pairs: issue 51)."""
    tasks = len({str(r["task_id"]) for r in rec["rows"]})
    seeds = len({int(r["seed"]) for r in rec["rows"]})
    return f"{tasks} tasks × {seeds} seeds"


def bench_sentence(runs: list[dict[str, Any]], bench: str) -> str:
    """One sentence per fixed-budget benchmark for the README: each value's regime chosen on
    validation and its AMC − Best-of-N on test (or that it has not run)."""
    parts = []
    for value in grid.GRIDS[bench].values:
        best = grid.best_regime(runs, bench, value)
        if best is None:
            continue
        test = twin_on_test(runs, best)
        got = (f"{fmt_diff(compare(test))} over {tasks_seeds(test)}" if test is not None
               else "its test cell has not run")
        regime = setting(best["cell"]).rsplit(", value = ", 1)[0]
        label = "no value" if value == "none" else f"the {VALUE_LABEL[value]}"
        parts.append(f"with {label} ({regime}) {got}")
    done = len(grid.of_bench(runs, bench, "validation"))
    declared = len(grid.candidates(bench))
    ran = f"{done} of {declared} declared validation cells run"
    if not parts:
        return f"{NAME[bench]}: no regime chosen yet ({ran})."
    return (f"{NAME[bench]} ({PRIOR[bench]}; {ran}), AMC − Best-of-N on the oracle best-of-pool "
            f"{SCORE[bench]} on test at the regime chosen on validation: "
            + "; ".join(parts) + ".")
