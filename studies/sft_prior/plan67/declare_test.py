"""Declare the plan-67 regime's test set by the rule its ``protocol.json`` declared before the
cell ran, before any test run; written once. The rule (``studies/sft_prior/sizing.py``) buys
power with seeds per task: S in 4, 8, 12, 16, 24, at least 10 tasks, the 16 fresh tasks the
cell left, CPU read from ``logs/plan67-seedS.log``, 6 hours at most.

    python -m studies.sft_prior.plan67.declare_test
"""

from __future__ import annotations

import sys

from studies.sft_prior import sizing
from studies.sft_prior.plan67.declare import MIN_TASKS, SEED_OPTIONS
from studies.sft_prior.plan67.run import EVIDENCE, HERE, REPO, protocol

RULE = sizing.Rule(seed_options=SEED_OPTIONS, min_tasks=MIN_TASKS, log_glob="plan67-seed*.log",
                   permutation_seed=6168)


def main() -> int:
    return sizing.declare_main(HERE, EVIDENCE, protocol(), RULE, REPO / "logs")


if __name__ == "__main__":
    sys.exit(main())
