"""Declare the horizon-16 regime's test set by the rule its ``protocol.json`` declared before
the cell ran, before any test run; written once. The rule (``studies/sft_prior/sizing.py``)
buys power with seeds per task: S in 4, 8, 12, 16, at least 20 tasks, the band's 26-task
reserve, CPU read from ``logs/horizon-seedS.log``, 6 hours at most.

    python -m studies.sft_prior.horizon.declare_test
"""

from __future__ import annotations

import sys

from studies.sft_prior import sizing
from studies.sft_prior.horizon.run import EVIDENCE, HERE, REPO, protocol

RULE = sizing.Rule(seed_options=(4, 8, 12, 16), min_tasks=20, log_glob="horizon-seed*.log",
                   permutation_seed=6161)


def main() -> int:
    return sizing.declare_main(HERE, EVIDENCE, protocol(), RULE, REPO / "logs")


if __name__ == "__main__":
    sys.exit(main())
