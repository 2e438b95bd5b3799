"""Declare the horizon-16 regime's test set by the rule its ``protocol.json`` declared before
the cell ran, before any test run; written once. The rule (``studies/sft_prior/sizing.py``)
buys power with seeds per task: S in 4, 8, 12, 16, at least 20 tasks, the band's 26-task
reserve, CPU read from ``logs/horizon-seedS.log``, 6 hours at most.

    python -m studies.sft_prior.horizon.declare_test
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from studies.sft_prior import sizing
from studies.sft_prior.horizon.run import EVIDENCE, HERE, REPO, protocol
from studies.sft_prior.multistep.analyse import read

OUT = HERE / "test.json"
RULE = sizing.Rule(seed_options=(4, 8, 12, 16), min_tasks=20, log_glob="horizon-seed*.log",
                   permutation_seed=6161)


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
