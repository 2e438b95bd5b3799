"""The introduction of ``docs/results.md``: a template whose numbers are read, never typed.

``docs/results-intro.txt`` tells how the LLM regime was set up (which budget, why, on which
tasks, what the value was trained on). Every number in it is a ``{field}`` filled here from the
committed files the document is generated from:

- the regime's summary (``docs/results-assets/llm-regime/summary.json``): depth, distractors,
  budget, resampling interval, β, test tasks and seeds;
- beside it, the budget calibration (``calibration-budget<budget>.json``: Best-of-K_hi −
  Best-of-K_lo gap with its interval, pass@K_hi, tasks, rollouts) and the value's training
  record (``value-train.json``: validation Pearson and AUC);
- the declared test set (its task count);
- the sweep's headline sentence in ``docs/evidence.md`` (the β and interval of its best
  learned-value regime), so "β is / is not the sweep's choice" is computed.

:func:`digits_outside_fields` is the check that keeps it so: a digit in the template outside a
field, a code span or a name (``Gemma-3-270M``, issue references) is an error.

``python -m studies.llm_regime.intro TEMPLATE SUMMARY DECLARED EVIDENCE`` prints the paragraph
(``scripts/results_doc.sh`` passes it to ``amc results-doc --intro``).
"""

from __future__ import annotations

import json
import re
import string
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

NAMES = ("Gemma-3-270M", "MiniLM", "pass@")
"""Names that contain digits but are no measurement."""
_REFERENCE = re.compile(r"issue \d+(, item \d+)?")


def _diff(g: Mapping[str, float]) -> str:
    return f"{g['mean']:+.3f} [{g['lo']:+.3f}, {g['hi']:+.3f}]"


def sweep_choice(evidence_md: str) -> tuple[float, int]:
    """(β, resampling interval) of the sweep's headline regime (its ``**In short:**`` line)."""
    line = next((x for x in evidence_md.splitlines() if x.startswith("**In short:**")), None)
    m = re.search(r"β = ([0-9.]+), every (\d+)", line or "")
    if m is None:
        raise ValueError("docs/evidence.md has no headline regime ('β = .., every ..'): "
                         "regenerate it (python -m studies.sweeps.evidence)")
    return float(m.group(1)), int(m.group(2))


def intro_fields(summary_path: Path, declared_path: Path, evidence_path: Path) -> dict[str, Any]:
    """The template's fields from the committed sources (clear errors when one is missing)."""
    s = json.loads(summary_path.read_text())
    cfg = s["config"]
    smc, env = cfg["smc"], cfg["env"]["options"]
    steps = list(smc["resample_steps"])
    every = steps[1] - steps[0] if len(steps) > 1 else steps[0]
    cal = json.loads((summary_path.parent / f"calibration-budget{smc['max_steps']}.json")
                     .read_text())
    val = json.loads((summary_path.parent / "value-train.json").read_text())
    declared = json.loads(declared_path.read_text())
    sweep_beta, sweep_every = sweep_choice(evidence_path.read_text())
    beta = float(smc["beta"])
    return {
        "depth": env["max_depth"], "distractors": env["n_distractors"],
        "budget": smc["max_steps"], "test_tasks": s["n_tasks"], "seeds": len(s["seeds"]),
        "declared_tasks": len(declared["tasks"]), "cal_hi": cal["k_hi"], "cal_lo": cal["k_lo"],
        "cal_tasks": cal["n_tasks"], "gap": _diff(cal["gap"]),
        "pass_hi": f"{cal['pass_hi'][0]:.3f}", "rollouts": cal["rollouts"],
        "pearson": f"{val['best_val_pearson']:.3f}", "auc": f"{val['best_val_auc']:.3f}",
        "every": every, "every_is": "is" if every == sweep_every else "is not",
        "beta": f"{beta:g}", "beta_is": "is" if beta == sweep_beta else "is not",
        "sweep_beta": f"{sweep_beta:g}",
    }


def render_intro(template: str, fields: Mapping[str, Any]) -> str:
    """``template`` with its fields filled; an unknown field is an error naming it."""
    wanted = {f for _, f, _, _ in string.Formatter().parse(template) if f}
    if missing := sorted(wanted - set(fields)):
        raise ValueError(f"the results intro names unknown fields {missing}; known: "
                         f"{sorted(fields)}")
    return template.format_map(fields)


def digits_outside_fields(template: str) -> list[str]:
    """Digits of ``template`` outside ``{fields}``, code spans, names and issue references."""
    text = re.sub(r"\{[a-z_]+\}", "", template)
    text = re.sub(r"`[^`]*`", "", text)
    text = _REFERENCE.sub("", text)
    for name in NAMES:
        text = text.replace(name, "")
    return re.findall(r"\S*\d\S*", text)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 4:
        print("error: usage: python -m studies.llm_regime.intro TEMPLATE SUMMARY DECLARED "
              "EVIDENCE", file=sys.stderr)
        return 2
    template, summary, declared, evidence = (Path(a) for a in args)
    try:
        print(render_intro(template.read_text().strip(),
                           intro_fields(summary, declared, evidence)))
    except (OSError, ValueError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
