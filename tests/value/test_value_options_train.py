"""Head-mode training with the value options end to end on the learnable synthetic set: a
listwise objective ranks a task's siblings on validation, the fitted temperature is saved with
the model and read back, and the default run carries none."""

from __future__ import annotations

from pathlib import Path

import pytest

from amc.value.features import HeadConfig
from amc.value.ranking import ObjectiveConfig
from amc.value.scorers import LearnedValueOptions, make_learned_value
from amc.value.temperature import TemperatureConfig, stored_temperature
from amc.value.train import train


@pytest.mark.slow
def test_listwise_head_with_fitted_temperature(dataset_dir: Path, train_cfg,
                                               tmp_path: Path) -> None:
    head = HeadConfig(cache_dir=tmp_path / "cache", epochs=20,
                      objective=ObjectiveConfig(kind="listwise", select_on="auc_within"),
                      temperature=TemperatureConfig(fit=True))
    cfg = train_cfg.model_copy(update={"mode": "head", "head": head, "track": False})
    res = train(dataset_dir, cfg, tmp_path / "options")
    # the scene words say which sibling wins from step 1 on; step-0 siblings are one text (ties)
    assert res.best["best_val_auc_within"] > 0.8
    t = res.best["resample_temperature"]
    assert 0 < t < 10 and res.best["resample_temperature_at_bound"] == 0.0
    assert res.best["val_group_log_loss_fitted"] < res.best["val_group_log_loss_uniform"]
    assert stored_temperature(res.model_dir) == pytest.approx(t)
    # The sampler reads it: values scaled by beta / T, so weights go as exp(V / T).
    fitted = make_learned_value(LearnedValueOptions(model=str(res.model_dir)), beta=0.1)
    raw = make_learned_value(LearnedValueOptions(model=str(res.model_dir), temperature="none"),
                             beta=0.1)
    texts = ["Predict.\n=== NOW ===\n[STATE] a", "Predict.\n=== NOW ===\n[STATE] b"]
    assert fitted.scale == pytest.approx(0.1 / t) and raw.scale == 1.0
    assert fitted.score_texts(texts) == pytest.approx([v * 0.1 / t for v in
                                                       raw.score_texts(texts)])
    plain = train(dataset_dir, cfg.model_copy(update={"head": HeadConfig(
        cache_dir=tmp_path / "cache", epochs=2)}), tmp_path / "plain")
    assert stored_temperature(plain.model_dir) is None
