"""The value's representation options beyond the rendering, read off their benchmark.

``benchmarks/bench_value_variants.py`` compares, on one reduced sweep dataset and the same
held-out states, one head (a) with an ensemble of K heads (b) (:mod:`studies.sweeps.ensemble`), and
LoRA on the encoder (c) with one head trained on exactly (c)'s subset (d); its result
(``docs/value-variants/result.json``) holds each variant's offline figures and a bootstrap
interval over held-out tasks of the (b) - (a) and (c) - (d) differences in AUC within (task,
step) and log-loss. This section states those numbers and which option is kept: one whose
difference is separable (interval excluding 0) in its favour on a figure, and not separable
against it on the other, would go on to a declared sweep cell; the others are not kept.
"""

from __future__ import annotations

from typing import Any

PAIRS = (("b", "a", "an ensemble of {k} heads (p averaged)", "one head"),
         ("c", "d", "LoRA on the encoder", "one head on the same {lora} states"))
"""(option, its reference, option label, reference label)."""
FIGURES = (("auc_within", "AUC within (task, step)", 1), ("log_loss", "log-loss", -1))
"""(figure, label, sign: +1 when larger is better)."""


def verdict(lo: float, hi: float, sign: int) -> str:
    """``better`` / ``worse`` when the interval of (option - reference) excludes 0, else
    ``not separable``."""
    if lo > 0 or hi < 0:
        return "better" if (lo > 0) == (sign > 0) else "worse"
    return "not separable"


def variants_section(res: dict[str, Any] | None) -> str:
    """The section (empty without the benchmark's result)."""
    if not res:
        return ""
    lora = res["variants"]["c"]["states"]
    lines = ["### Representation: ensembles and LoRA (offline)\n",
             f"From `benchmarks/bench_value_variants.py` ({res['max_tasks']} value-training "
             f"tasks, {res['splits']['train']['rows']} training states, the same "
             f"{res['held_states']:.0f} held-out states of {res['splits']['test']['tasks']} "
             "tasks; option − reference with a bootstrap 95% interval over held-out tasks):\n"]
    kept = []
    for opt, ref, label, ref_label in PAIRS:
        words = []
        for fig, flabel, sign in FIGURES:
            a, b = res["figures"][opt][fig], res["figures"][ref][fig]
            lo, hi = res["bootstrap"][f"{opt}-{ref}:{fig}"]
            v = verdict(lo, hi, sign)
            words.append((v, f"{flabel} {a:.3f} vs {b:.3f}, {a - b:+.3f} [{lo:+.3f}, "
                             f"{hi:+.3f}]: {v}"))
        name = label.format(k=res["k"], lora=lora)
        lines.append(f"- {name} ({res['variants'][opt]['states']} training states, "
                     f"{res['variants'][opt]['seconds']:.0f} s) vs "
                     f"{ref_label.format(lora=lora)}: " + "; ".join(w for _, w in words) + ".")
        vs = [v for v, _ in words]
        if "better" in vs and "worse" not in vs:
            kept.append(name)
    tail = (f"Kept for a declared sweep cell: {', '.join(kept)}." if kept else
            "Neither option is kept: no figure separates in its favour, so neither goes on to "
            "a sweep cell.")
    lines.append(f"\n{tail} LoRA's probe measured {res['lora']['probe_states_per_s']:.1f} "
                 f"states/s on this CPU ({lora} states in its time budget): a CPU-sized run, "
                 "not what LoRA gives with a GPU and full epochs.\n")
    return "\n".join(lines) + "\n"
