"""Declare the plan-band regime's test set by the rule its ``protocol.json`` declared before
the cell ran (as the progress-value cell's rule: goal met, n = max(tasks for 80% power at half
the room, 20), the first n of the band's test reserve in a ``default_rng(6130)`` order, CPU
from the cell's logs ``logs/band-seedS.log``), before any test run; written once.

    python -m studies.sft_prior.band.declare_test
"""

from __future__ import annotations

import json
import sys

from studies.sft_prior.band.run import EVIDENCE, HERE, REPO, protocol
from studies.sft_prior.progress.declare_test import declare_cell, markdown

OUT = HERE / "test.json"


def main() -> int:
    p = protocol()
    d = declare_cell(p, EVIDENCE, OUT, p["test_set_rule"]["reserve"], 6130, REPO / "logs",
                     "band-seed*.log")
    OUT.write_text(json.dumps(d, indent=1) + "\n")
    OUT.with_suffix(".md").write_text(markdown(d))
    print(markdown(d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
