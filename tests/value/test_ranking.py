"""Within-(task, step) objectives: the loss terms on hand-checked batches, whole-group batches,
and the point of it all -- where the between-group and within-group signals disagree, plain
regression ranks siblings backwards and every ranking objective ranks them right."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from amc.value.metrics import within_group_auc
from amc.value.model import ModelConfig, ValueModel
from amc.value.ranking import (
    ObjectiveConfig,
    centred_loss,
    group_batches,
    group_ids,
    listwise_loss,
    objective_loss,
    pairwise_loss,
)
from amc.value.train_head import SplitFeatures, fit_head, head_predict
from amc.value.train_run import TrainConfig


def test_pairwise_loss_counts_only_better_pairs_of_one_group() -> None:
    f = torch.tensor([0.3, 0.1, 0.0, 5.0])
    y = torch.tensor([1.0, 0.0, 0.0, 0.0])
    gid = torch.tensor([0, 0, 0, 1])  # the last state is alone: it pairs with nobody
    want = (math.log1p(math.exp(-2.0)) + math.log1p(math.exp(-3.0))) / 2  # scale 0.1
    assert float(pairwise_loss(f, y, gid, 0.1)) == pytest.approx(want, rel=1e-6)
    # a sibling in another group with a huge value changes nothing
    assert float(pairwise_loss(f, y, torch.tensor([0, 0, 0, 0]), 0.1)) != pytest.approx(want)
    assert float(pairwise_loss(f, torch.zeros(4), gid, 0.1)) == 0.0


def test_listwise_loss_is_the_log_loss_of_which_sibling_succeeds() -> None:
    f = torch.tensor([0.2, 0.0, 0.0, 1.0, 1.0, 0.0])
    y = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])  # group 1 is all successes: skipped
    gid = torch.tensor([0, 0, 0, 1, 1, 1])
    p0 = math.exp(2.0) / (math.exp(2.0) + 2.0)
    assert float(listwise_loss(f, y, gid, 0.1)) == pytest.approx(-math.log(p0), rel=1e-6)
    two = torch.tensor([1.0, 1.0, 0.0, 1.0, 1.0, 1.0])  # two winners share the target mass
    lse = math.log(math.exp(2.0) + 2.0)
    want = -0.5 * ((2.0 - lse) + (0.0 - lse))
    assert float(listwise_loss(f, two, gid, 0.1)) == pytest.approx(want, rel=1e-6)


def test_centred_loss_ignores_group_offsets() -> None:
    f = torch.tensor([0.1, 0.3, 0.9, 0.5])
    y = torch.tensor([0.0, 1.0, 1.0, 0.0])
    gid = torch.tensor([0, 0, 1, 1])
    base = float(centred_loss(f, y, gid))
    shifted = f + torch.tensor([7.0, 7.0, -3.0, -3.0])
    assert float(centred_loss(shifted, y, gid)) == pytest.approx(base, rel=1e-6)
    # group 0 centred: f (-0.1, 0.1) vs y (-0.5, 0.5); group 1: f (0.2, -0.2) vs y (0.5, -0.5)
    assert base == pytest.approx((0.16 + 0.16 + 0.09 + 0.09) / 4, rel=1e-6)


def test_regression_objective_is_the_plain_loss() -> None:
    reg = torch.tensor(0.25)
    f, y, gid = torch.zeros(2), torch.tensor([1.0, 0.0]), torch.zeros(2, dtype=torch.long)
    assert objective_loss(ObjectiveConfig(), reg, f, y, gid) is reg
    both = objective_loss(ObjectiveConfig(kind="pairwise", weight=2.0, regression_weight=0.5),
                          reg, f, y, gid)
    assert float(both) == pytest.approx(0.5 * 0.25 + 2.0 * math.log(2.0), rel=1e-6)
    with pytest.raises(ValueError, match="both 0"):
        ObjectiveConfig(kind="listwise", weight=0.0, regression_weight=0.0)


def test_group_batches_hold_whole_groups_once_in_a_seeded_order() -> None:
    gid = group_ids([("a", 0), ("b", 0), ("a", 0), ("c", 1), ("b", 0), ("a", 1)])
    assert gid.tolist() == [0, 1, 0, 2, 1, 3]
    batches = [b.tolist() for b in group_batches(gid, 2, torch.Generator().manual_seed(3))]
    assert sorted(i for b in batches for i in b) == list(range(6))
    for b in batches:
        groups = {int(gid[i]) for i in b}
        assert len(groups) <= 2
        assert sorted(b) == sorted(i for i in range(6) if int(gid[i]) in groups)
    again = [b.tolist() for b in group_batches(gid, 2, torch.Generator().manual_seed(3))]
    assert again == batches


def opposed(n_groups: int, size: int, seed: int) -> SplitFeatures:
    """Feature 0 = group level c + within offset e; easy groups have high c, but within a group
    the *lower* e succeeds more (the two signals point in opposite directions)."""
    rng = np.random.default_rng(seed)
    c = np.repeat(rng.normal(0, 1.0, n_groups), size)
    e = rng.normal(0, 0.3, n_groups * size)
    y = rng.random(n_groups * size) < 1 / (1 + np.exp(-(2.5 * c - 8.0 * e)))
    x = np.stack([c + e, rng.normal(0, 1, n_groups * size)], 1).astype(np.float32)
    gid = np.repeat(np.arange(n_groups), size)
    cols = {"target": y.astype(float).tolist(), "reward_so_far": [0.0] * len(y),
            "success": y.tolist(), "task_id": [f"t{g}" for g in gid], "step": [2] * len(y)}
    return SplitFeatures(x, cols)


def head_only_model() -> ValueModel:
    """A ValueModel whose head reads 2 features; head mode never calls the backbone."""
    hf = SimpleNamespace(hidden_size=2, architectures=[], is_decoder=False)
    return ValueModel(ModelConfig(), torch.nn.Identity(), hf, torch.Generator().manual_seed(0))


def sibling_auc(objective: ObjectiveConfig, train: SplitFeatures, val: SplitFeatures) -> float:
    cfg = TrainConfig(mode="head", track=False, head={"epochs": 12, "lr": 0.05, "patience": 12,
                                                      "objective": objective})
    model = head_only_model()
    fit_head(model, train, val, cfg, progress=False)
    pred = head_predict(model, val.x)
    groups = list(zip(val.cols["task_id"], val.cols["step"], strict=True))
    return within_group_auc(pred, np.array(val.cols["success"]), groups)


def test_ranking_objectives_rank_siblings_where_regression_does_not() -> None:
    train, val = opposed(200, 8, seed=0), opposed(80, 8, seed=1)
    assert sibling_auc(ObjectiveConfig(), train, val) < 0.4
    # pairwise and listwise beside the full regression loss; centred targets alone (beside the
    # regression loss they only re-weight its within part: the between signal still wins)
    for objective in (ObjectiveConfig(kind="pairwise", select_on="auc_within"),
                      ObjectiveConfig(kind="listwise", select_on="auc_within"),
                      ObjectiveConfig(kind="centred", regression_weight=0.0,
                                      select_on="auc_within")):
        assert sibling_auc(objective, train, val) > 0.65, objective.kind


def test_full_mode_refuses_the_head_mode_options() -> None:
    from amc.value.train import check_full_mode

    check_full_mode(TrainConfig())
    with pytest.raises(ValueError, match=r"objective\.kind='listwise' needs mode='head'"):
        check_full_mode(TrainConfig(head={"objective": {"kind": "listwise"}}))
    with pytest.raises(ValueError, match=r"temperature\.fit needs mode='head'"):
        check_full_mode(TrainConfig(head={"temperature": {"fit": True}}))


def test_fitted_temperature_is_stored_as_metrics() -> None:
    from amc.value.temperature import TemperatureConfig
    from amc.value.train_head import fit_resample_temperature

    val = opposed(80, 8, seed=2)
    x0 = val.x[:, 0].astype(float)
    good = fit_resample_temperature(-x0, val, TemperatureConfig())  # ranks siblings right
    bad = fit_resample_temperature(x0, val, TemperatureConfig())
    assert good["resample_temperature_at_bound"] == 0.0
    assert good["val_group_log_loss_fitted"] < good["val_group_log_loss_uniform"]
    assert bad["resample_temperature"] == pytest.approx(10.0, rel=1e-3)
