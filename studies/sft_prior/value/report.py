"""``result.md`` of the value protocol, generated from ``result.json`` (every figure from it)."""

from __future__ import annotations

import math
from typing import Any


def _n(x: Any, spec: str = ".3f", signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return format(x, ("+" if signed else "") + spec)


def markdown(d: dict[str, Any]) -> str:
    """The regime, the data, one row per candidate at the first resampling step, the choice."""
    c = d["regime"]
    t = int(c["step"])
    key = f"step{t}"
    boot = d["bootstrap"][key]
    data = d["data"]
    out = ["# The value of the fine-tuned prior's chosen regime (issue 62, item 1)", "",
           f"Declared protocol: `{d['protocol']}` ({d['protocol_declared_utc']}). Regime: "
           f"checkpoint {c['checkpoint']}, depth {c['depth']}, H {c['horizon']}, N {c['n']}, "
           f"resampling after step {t}, beta {c['beta']:g}.", "",
           f"Training: {d['plan']['n_tasks']} train-split tasks x {len(d['plan']['seeds'])} "
           f"seed(s), {d['plan']['rollouts']} Best-of-8 rollouts of the prior "
           f"({int(data['train']['states'])} MiniLM rows, {int(data['llm_train']['states'])} "
           f"LLM-head states; validation {int(data['validation']['tasks'])} tasks, "
           f"{int(data['validation']['mixed_groups'])} mixed groups at step {t}). Held-out "
           f"(`{d['held_out_folder']}`): {int(data['held']['tasks'])} tasks, "
           f"{int(data['held']['states'])} states at step {t}, "
           f"{int(data['held']['successes'])} of them succeed within H, "
           f"{int(data['held']['mixed_groups'])} tasks mixed; {int(d['doomed_states'])} "
           "doomed.", "",
           f"| candidate | held-out within AUC [95% task bootstrap] | vs {d['reference']} | "
           "validation within AUC | spread / beta | weight ratio beta / T | fitted T | "
           "log-loss beta / T / uniform | doomed weight | CPU s / state |",
           "|" + "---|" * 10]
    for name, r in d["candidates"].items():
        b, f = boot[name], r["figures"][key]
        seeds = r.get("seeds")
        rng = (f" (seeds {_n(min(seeds.values()))}-{_n(max(seeds.values()))})"
               if seeds else "")
        out.append(
            f"| {name} | {_n(b['auc'])} [{_n(b['lo'])}, {_n(b['hi'])}]{rng} | "
            f"{_n(b.get('diff'), signed=True)} [{_n(b.get('diff_lo'), signed=True)}, "
            f"{_n(b.get('diff_hi'), signed=True)}] | {_n(r['val_auc_within'])} | "
            f"{_n(f['spread_over_beta'], '.2f')} | {_n(f['weight_ratio'], '.2f')} / "
            f"{_n(f.get('weight_ratio_fitted'), '.2f')} | {_n(r['temperature'], '.3g')} | "
            f"{_n(f['log_loss_beta'])} / {_n(f.get('log_loss_fitted'))} / "
            f"{_n(f['log_loss_uniform'])} | {_n(f['doomed_weight'], '.2f')} | "
            f"{_n(d['cost_cpu_s_per_state'][name], '.3g')} |")
    ch = d["choice"]
    out.append("")
    if ch["chosen"] is None:
        out.append(f"No candidate is chosen: {ch['reason']}.")
    else:
        b = boot[ch["chosen"]]
        out.append(f"Chosen by the declared rule: **{ch['chosen']}** ({ch['reason']}); "
                   f"held-out within AUC {_n(b['auc'])} [{_n(b['lo'])}, {_n(b['hi'])}] at "
                   f"step {t}; it resamples at {ch['resample_at']}.")
        if not ch["above_chance"]:
            out.append("No candidate ranks siblings above chance: the chosen lower bound is "
                       "not above 0.5.")
        out.append(f"Goal (held-out within AUC >= 0.65 at step {t}): "
                   + ("met" if ch["goal_met"] else "not met")
                   + " (chosen on this set: optimistic; the declared test is the unbiased "
                     "look).")
    if d.get("partial"):
        out.append(f"Partial run: {d['partial']}.")
    return "\n".join(out) + "\n"
