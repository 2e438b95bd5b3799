"""The generated markdown of ``results-chosen.json`` (every number in it comes from that file):
the value options at step 1 of issue 49's chosen regime, one table per held-out set (never
pooled: their horizons differ), and a "Reading" generated from the numbers."""

from __future__ import annotations

from typing import Any

from studies.value_options.report import _auc_cell, _diff_cell, _f

GOAL = 0.62
"""Issue 50's held-out within AUC goal at the first resampling step."""


def _cells(doc: dict[str, Any], h: str) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(rendering, objective, option result, seed-0 bootstrap) of held-out set ``h``."""
    return [(v, k, r, var["bootstrap"][h][k]) for v, var in doc["variants"].items()
            for k, r in var["options"].items()]


def _seed_mean(r: dict[str, Any], h: str) -> float:
    return sum(sd[h] for sd in r["seeds"].values()) / len(r["seeds"])


def sets_table(doc: dict[str, Any]) -> list[str]:
    """What each held-out set holds (from the first rendering: the sets do not depend on it)."""
    var = next(iter(doc["variants"].values()))
    lines = ["| held-out set | rollouts from | horizon | tasks | in training (dropped) | kept | "
             "seeds | rollouts | successes | states at step 1 | of them succeed | "
             "mixed groups at step 1 | mixed pairs |", "|---|---|---|---|---|---|---|---|---|"
             "---|---|---|---|"]
    for h, i in var["held_out_sets"].items():
        b = var["bootstrap"][h]["regression"]
        lines.append(f"| `{h}` | `{i['folder']}/{i['spec']}` | {i['horizon']} | {i['tasks']} | "
                     f"{i['tasks_in_training']} | {i['tasks_kept']} | "
                     f"{', '.join(map(str, i['seeds']))} | {i['rollouts']} | "
                     f"{i['rollout_successes']} | {i['states_step1']} | {i['success_step1']} | "
                     f"{b['tasks']:.0f} | {b['pairs']:.0f} |")
    return lines


def set_table(doc: dict[str, Any], h: str) -> list[str]:
    t = doc["step"]
    seeds = ", ".join(str(s) for s in doc["seeds"])
    lines = [f"| rendering | objective | within AUC step {t} [95% CI] (seed {doc['seeds'][0]}) "
             f"| vs regression | seeds {seeds} (mean) | spread/beta | weight ratio at beta | "
             "fitted T | weight ratio at T | log-loss at beta | at T | uniform |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for v, k, r, b in _cells(doc, h):
        m = r["held_out"][h]
        sd = ", ".join(f"{x[h]:.3f}" for x in r["seeds"].values())
        lines.append(
            f"| `{v}` | {k} | {_auc_cell(b)} | {'-' if k == 'regression' else _diff_cell(b)} | "
            f"{sd} ({_seed_mean(r, h):.3f}) | {_f(m[f'spread_over_beta_step{t}'])} | "
            f"{_f(m[f'weight_ratio_step{t}'], 2)} | {_f(r['temperature'], 4)}"
            f"{' (bound)' if r['temperature_at_bound'] else ''} | "
            f"{_f(m['weight_ratio_fitted'], 2)} | {_f(m[f'log_loss_beta_step{t}'])} | "
            f"{_f(m[f'log_loss_fitted_step{t}'])} | {_f(m[f'log_loss_uniform_step{t}'])} |")
    return lines


def reading_set(doc: dict[str, Any], h: str) -> list[str]:
    """Generated sentences on one held-out set."""
    t = doc["step"]
    cells = _cells(doc, h)
    n = len(cells)
    base = cells[0][3]
    auc, v, k, lo, hi = max((b["auc"], v, k, b["lo"], b["hi"]) for v, k, _, b in cells)
    m, mv, mk = max((_seed_mean(r, h), v2, k2) for v2, k2, r, _ in cells)
    above_half = [f"{k2} on `{v2}`" for v2, k2, _, b in cells if b["lo"] > 0.5]
    at_goal = [f"{k2} on `{v2}`" for v2, k2, r, _ in cells if _seed_mean(r, h) >= GOAL]
    sep = [f"{k2} on `{v2}` ({_diff_cell(b)})" for v2, k2, _, b in cells
           if k2 != "regression" and (b["diff_lo"] > 0 or b["diff_hi"] < 0)]
    sb = [r["held_out"][h][f"spread_over_beta_step{t}"] for _, _, r, _ in cells]
    wr = [r["held_out"][h][f"weight_ratio_step{t}"] for _, _, r, _ in cells]
    wt = [r["held_out"][h]["weight_ratio_fitted"] for _, _, r, _ in cells]
    worse = sum(r["held_out"][h][f"log_loss_fitted_step{t}"]
                >= r["held_out"][h][f"log_loss_uniform_step{t}"] for _, _, r, _ in cells)
    return [
        f"- `{h}`: {base['tasks']:.0f} tasks have a mixed step-{t} group (a success and a "
        f"failure among their siblings), {base['pairs']:.0f} mixed pairs in all: the intervals "
        "below rest on that many task clusters, so they are wide.",
        f"- `{h}`: the best seed-0 within AUC at step {t} is {auc:.3f} [{lo:.3f}, {hi:.3f}] "
        f"({k} on `{v}`); the best mean over the {len(doc['seeds'])} training seeds is "
        f"{m:.3f} ({mk} on `{mv}`). Both maxima are picked on this held-out set itself "
        "(optimistic). Seed-mean AUC at or above issue 50's goal of "
        f"{GOAL:.2f}: {'; '.join(at_goal) if at_goal else 'none'} (of {n} cells); seed-0 "
        f"interval above 0.5: {'; '.join(above_half) if above_half else 'none'}.",
        f"- `{h}`: paired differences to regression (same rendering, seed 0) whose 95% "
        f"interval excludes 0: {'; '.join(sep) if sep else 'none'}.",
        f"- `{h}`: within-group spread of V at step {t} is {min(sb):.2f} to {max(sb):.2f} "
        f"beta, a weight ratio of {min(wr):.2f} to {max(wr):.2f} at beta = {doc['beta']} and "
        f"{min(wt):.2f} to {max(wt):.2f} at the fitted T; {worse} of {n} heads have a "
        f"within-group log-loss at their fitted T no better than uniform resampling's.",
    ]


def reading(doc: dict[str, Any]) -> list[str]:
    first = next(iter(next(iter(doc["variants"].values()))["held_out_sets"]))
    m = max(_seed_mean(r, first) for _, _, r, _ in _cells(doc, first))
    lines = ["### Reading (generated)", ""]
    for h in next(iter(doc["variants"].values()))["held_out_sets"]:
        lines += reading_set(doc, h)
    lines.append(
        f"- For issue 50: on the chosen regime's held-out set (`{first}`), the old study's "
        f"candidates {'reach' if m >= GOAL else 'do not reach'} the goal of {GOAL:.2f} "
        f"within AUC at step {doc['step']} by their best seed mean ({m:.3f}), offline and "
        "chosen after the fact; no declared choice or test cell is implied.")
    return lines


def markdown(doc: dict[str, Any]) -> str:
    p, g = doc["provenance"], doc["regime"]
    var = next(iter(doc["variants"].values()))
    lines = ["# Value options at step 1 of the chosen regime (generated by `python -m "
             "studies.value_options.measure --regime chosen`)", "",
             f"Issue 49's declared rule chose {g['env']} depth {g['depth']}, horizon "
             f"{g['horizon']} steps, N = {g['n']}, resampling once after step "
             f"{g['resample_after_step']}, beta = {g['beta']}. The candidates are the old "
             "study's (`results.md`): the same objectives, renderings, fitted temperature, "
             f"training data (the rounds' prior rollouts of the OLD regime, horizon 5: "
             f"{var['rows']['train']} train and {var['rows']['validation']} validation states) "
             "and frozen MiniLM-L6 features with a linear head; only the held-out states "
             "change: the chosen regime's prior states at its resampling step "
             f"{doc['step']}, success = success within the rollout's horizon. Exploratory and "
             "offline: no protocol was declared for this and no test cell ran. Intervals: "
             f"task-cluster bootstrap, {doc['bootstrap_draws']} draws, over the tasks with a "
             "mixed group; 'vs regression' is paired on the same draws. The two held-out sets "
             "have different horizons and are never pooled.", "",
             f"Commit {p['commit']}; renderer blob {p['render_py_blob'][:10]} (committed: "
             f"{p['render_py_committed'][:10]}); 1-min load {p['load_average_1m']:.1f} on "
             f"{p['cpus']} CPUs; states embedded in this run (the rest from the cache): "
             + ", ".join(f"`{v}` {x['embedding']['embedded']:.0f}"
                         for v, x in doc["variants"].items()) + ".", "",
             "### Held-out sets", "", *sets_table(doc), ""]
    for h, i in var["held_out_sets"].items():
        lines += [f"### `{h}` (horizon {i['horizon']})", "", *set_table(doc, h), ""]
    lines += reading(doc)
    return "\n".join(lines) + "\n"
