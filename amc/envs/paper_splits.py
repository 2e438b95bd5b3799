"""The paper's task-id splits, shipped with the package.

Each benchmark package that has them holds ``paper_splits.json``: ``{"source": ..., "test":
[...], "train": [...]}``, integer task ids (facts, with where they come from in ``source``), so
a fresh clone runs the paper's tasks without any download. Larger third-party files (TextCraft's
recipes and goal list, WebShop's catalog) are not here: ``amc fetch textcraft`` and
``amc fetch webshop`` download them with pinned hashes. WebShop's split is two ranges, so it is
written here as code (:data:`WEBSHOP_TEST_IDS`).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

BENCHMARKS = ("sciworld", "textcraft", "webshop")

WEBSHOP_TEST_IDS = tuple(range(5, 55))
"""WebShop's test goals (AgentGym's and the AMC paper's webshop_test_idx.json: 5..54)."""
WEBSHOP_TRAIN_IDS = tuple(i for i in range(1501) if i not in WEBSHOP_TEST_IDS)
"""WebShop's train goals: 0..1500 without the test ids (1451 ids)."""


@cache
def _load(bench: str) -> dict[str, list[int]]:
    if bench == "webshop":
        return {"test": list(WEBSHOP_TEST_IDS), "train": list(WEBSHOP_TRAIN_IDS)}
    text = resources.files(f"amc.envs.{bench}").joinpath("paper_splits.json").read_text()
    doc = json.loads(text)
    return {k: list(v) for k, v in doc.items() if k in ("train", "test")}


def paper_split(bench: str, split: str) -> list[int]:
    """The paper's ``split`` ("train" or "test") of ``bench`` (sciworld, textcraft, webshop)."""
    if bench not in BENCHMARKS:
        raise ValueError(f"no packaged paper split for {bench!r} (have {', '.join(BENCHMARKS)})")
    table = _load(bench)
    if split not in table:
        raise ValueError(f"{bench} paper splits are 'train' and 'test', not {split!r}")
    return list(table[split])
