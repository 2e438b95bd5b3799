"""Options of a GRPO run: sizes, optimiser, LoRA and the prompt (defaults = CPU miniature)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from amc.config import Frozen
from amc.priors.prompts import Style


class GRPOOptions(Frozen):
    """One GRPO fine-tuning run (``amc grpo``; ``configs/grpo/gpu.yaml`` for a GPU)."""

    env: str = "textcraft"
    """Environment registry name."""
    env_options: dict[str, Any] = Field(
        default_factory=lambda: {"reward": "dense", "max_depth": 1, "n_distractors": 0})
    """Environment options (default: TextCraft depth 1, no distractors: an easy setting)."""
    model: str = "embedded:gemma-3-270m"
    """Base model: HF id or directory; embedded:<name> converts the bundled GGUF once."""
    split: str = "train"
    """Task split trained on (evaluation uses another)."""
    max_tasks: int | None = Field(4, ge=1)
    """Only the first K tasks of the split (None = all)."""
    tasks_per_step: int = Field(2, ge=1)
    """Tasks (groups) sampled per optimiser step."""
    group_size: int = Field(4, ge=2)
    """G rollouts per task; advantages are relative within the group."""
    steps: int = Field(4, ge=1)
    """Rollout-and-update rounds."""
    iterations: int = Field(2, ge=1)
    """Optimiser updates per batch of rollouts (GRPO's mu; > 1 makes the ratio clip matter)."""
    max_turns: int = Field(4, ge=1)
    """Most agent turns per rollout."""
    max_new_tokens: int = Field(6, ge=1)
    """Output cap per turn (a turn also ends at the first newline)."""
    temperature: float = Field(1.0, gt=0)
    """Sampling temperature; log-probabilities use the same one."""
    prompt: Style = "menu"
    """Prompt style, as the hf prior's (menu: the numbered valid actions)."""
    max_history_steps: int = Field(30, ge=1)
    """Most recent steps shown in the prompt (hf prior default)."""
    menu_limit: int = Field(60, ge=1)
    """Most valid actions listed (hf prior default)."""
    lr: float = Field(1e-4, gt=0)
    """AdamW learning rate of the LoRA weights."""
    beta: float = Field(0.04, ge=0)
    """KL(policy || reference) coefficient."""
    clip_eps: float = Field(0.2, gt=0, lt=1)
    """Ratio clip epsilon."""
    scale_advantages: bool = True
    """Divide by the group's reward std (GRPO); False = mean-centred only (Dr. GRPO)."""
    init_adapter: str | None = None
    """Start from this adapter (``models:/amc-policy-<env>/<version>`` of ``amc sft``, a
    ``runs:/`` URI or a folder): it is merged into the base weights, so the KL reference is the
    SFT policy and the new LoRA learns on top of it."""
    lora_r: int = Field(8, ge=1)
    """LoRA rank."""
    lora_alpha: int = Field(16, ge=1)
    """LoRA scaling numerator (scale = alpha / r)."""
    lora_targets: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    """Module names that get adapters."""
    micro_batch: int = Field(8, ge=1)
    """Turns per forward/backward pass (gradients are accumulated over the batch)."""
    device: str = "auto"
    """cuda, cpu or auto."""
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    """Weights dtype; auto = bfloat16 on GPU, float32 on CPU."""
    seed: int = 0
    """Seeds task order, sampling and LoRA initialisation."""
    out_dir: str = "models/policy"
    """Where the adapter, metrics.json and curve.jsonl are written."""
    model_name: str | None = None
    """Registered model name; None = amc-policy-<env>."""
    track: bool = True
    """Log an MLflow run and register the adapter."""
    tracking_uri: str | None = None
    """MLflow store (None = $MLFLOW_TRACKING_URI or sqlite:///mlruns/mlflow.db)."""

    @property
    def registered_name(self) -> str:
        return self.model_name or f"amc-policy-{self.env}"
