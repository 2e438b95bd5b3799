"""Declare the plan-67 regime's test set by the rule its ``protocol.json`` declared before the
cell ran, before any test run; written once. The rule (``studies/sft_prior/sizing.py``) buys
power with seeds per task: S in 4, 8, 12, 16, 24, at least 10 tasks, the 16 fresh tasks the
cell left, CPU read from ``logs/plan67-seedS.log``, 6 hours at most.

    python -m studies.sft_prior.plan67.declare_test
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from studies.sft_prior import sizing
from studies.sft_prior.multistep.analyse import read
from studies.sft_prior.plan67.declare import MIN_TASKS, SEED_OPTIONS
from studies.sft_prior.plan67.run import EVIDENCE, HERE, REPO, protocol

OUT = HERE / "test.json"
RULE = sizing.Rule(seed_options=SEED_OPTIONS, min_tasks=MIN_TASKS, log_glob="plan67-seed*.log",
                   permutation_seed=6168)


def declare(logs: Path = REPO / "logs") -> dict[str, Any]:
    if OUT.exists():
        raise SystemExit(f"{OUT.name} is already declared; it is written once")
    return sizing.declare(protocol(), json.loads((EVIDENCE / "result.json").read_text()),
                          read(EVIDENCE, "*__seed*.jsonl.gz"), logs, RULE)


def main() -> int:
    d = declare()
    OUT.write_text(json.dumps(d, indent=1) + "\n")
    print(json.dumps({k: d[k] for k in ("room", "sizing", "seeds", "tasks", "cpu")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
