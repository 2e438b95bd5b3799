"""Lower-variance regression targets than one realised return per visited state.

A visited state's realised future reward is one Bernoulli draw of its success probability:
with ``q = 0.4`` most targets are 0 whatever the state, and the head learns the noise. Two
ways to lower the variance, both producing a new target per (task, trajectory, step) row of a
value dataset (:func:`retarget` rewrites its ``target`` column):

- **several rollouts from the same state** (:func:`averaged`): the realised return averaged
  with K more returns of the prior's rollouts from that state (cheap for ``planner-mix``): the
  mean of K + 1 draws, variance / (K + 1), still unbiased for the prior's value;
- **TD(lambda)** (:func:`lambda_returns`): bootstrapped from a first value V over the
  trajectory store, G_t = r_{t+1} + gamma ((1 - lambda) V(s_{t+1}) + lambda G_{t+1}), G_T = 0
  (lambda = 1: the realised return; lambda = 0: one-step TD) -- biased towards V, lower
  variance (Sutton and Barto, ch. 12).

Keys follow :func:`amc.value.data.build_rows`: a task's trajectories are numbered in the order
they were given (:func:`keyed`). Pure apart from :func:`retarget`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from amc.types import History

Key = tuple[str, int, int]
"""(task id, trajectory index within the task, step) of a dataset row."""


def keyed(histories: Sequence[History]) -> Iterator[tuple[str, int, History]]:
    """(task id, trajectory index, history) with the dataset builder's numbering."""
    seen: dict[str, int] = {}
    for h in histories:
        g = seen.get(h.task_id, 0)
        seen[h.task_id] = g + 1
        yield h.task_id, g, h


def lambda_returns(rewards: Sequence[float], values: Sequence[float], lam: float,
                   gamma: float = 1.0) -> list[float]:
    """G^lambda_t for states s_0..s_T from rewards r_1..r_T and values V(s_0..s_T).

    ``values[T]`` is the last state's value (0 when terminal or out of budget); ``values[0]``
    is not used. Length T + 1, ``G_T = 0``."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must be in [0, 1], got {lam}")
    if len(values) != len(rewards) + 1:
        raise ValueError(f"{len(rewards)} rewards need {len(rewards) + 1} values, "
                         f"got {len(values)}")
    out = [0.0] * (len(rewards) + 1)
    for t in range(len(rewards) - 1, -1, -1):
        boot = (1 - lam) * float(values[t + 1]) + lam * out[t + 1]
        out[t] = float(rewards[t]) + gamma * boot
    return out


def averaged(realised: float, extra: Sequence[float] | np.ndarray) -> float:
    """The mean of the realised return and K more returns from the same state."""
    x = np.asarray(extra, float)
    return float((realised + x.sum()) / (1 + x.size))


def retarget(dataset_dir: str | Path, targets: Mapping[Key, float]) -> int:
    """Rewrite the ``target`` of every row of a saved value dataset whose key is in
    ``targets`` (every train/validation row must be); returns the rows changed.

    The rows' other columns (``success``, ``reward_so_far``...) stay, so metrics against the
    realised outcome are unchanged; the card records that the targets were replaced."""
    import json

    from datasets import Dataset, DatasetDict

    from amc.value.data import load_dataset_dir

    p = Path(dataset_dir)
    dsd, _, card = load_dataset_dir(p)
    changed, out = 0, {}
    for split, ds in dsd.items():
        keys = list(zip(ds["task_id"], ds["traj"], ds["step"], strict=True))
        if split != "test":
            missing = [k for k in keys if k not in targets]
            if missing:
                raise KeyError(f"no new target for {len(missing)} {split} rows, e.g. {missing[0]}")
        new = [float(targets.get(k, y)) for k, y in zip(keys, ds["target"], strict=True)]
        changed += sum(k in targets for k in keys)
        cols = {k: (new if k == "target" else ds[k]) for k in ds.features}
        out[split] = Dataset.from_dict(cols, features=ds.features)
    DatasetDict({s: d for s, d in out.items() if len(d)}).save_to_disk(str(p / "data.new"))
    import shutil

    shutil.rmtree(p / "data")
    (p / "data.new").rename(p / "data")
    card["targets_replaced"] = changed
    (p / "card.json").write_text(json.dumps(card, indent=2))
    return changed
