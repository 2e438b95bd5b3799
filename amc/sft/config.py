"""Options of a behaviour-cloning (SFT) run: demonstrations, prompt, LoRA, optimiser, checkpoints.

Defaults are the CPU run on TextCraft depths 1-3 with the embedded Gemma-3-270M and the
compact menu prompt (no instruction, no solved example): a few thousand demonstrations, LoRA
on the top layers only (backpropagation stops there, about half the cost of a full backward
pass on 2 cores), loss on the action tokens only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from amc.config import Frozen
from amc.priors.prompts import Style


class DemoOptions(Frozen):
    """Which episodes the planner demonstrates, and from which states."""

    split: str = "train"
    """The only split demonstrations may come from (a test task never is one)."""
    exclude_tasks_files: list[str] = Field(default_factory=list)
    """JSON task lists (or records with ``tasks``) never demonstrated: held-out sets."""
    max_tasks: int | None = Field(None, ge=1)
    """The first K tasks of the split after exclusions (None = all)."""
    skills: list[float] = Field(default_factory=lambda: [1.0, 0.6, 0.3])
    """One episode per entry and task: the prior follows the planner with this probability
    and otherwise takes a uniformly random valid action (1.0: the expert's own states; lower:
    recovery states a noisy prior reaches), always labelled with the planner's action."""
    max_steps: int = Field(20, ge=1)
    """Most steps of a demonstration episode."""
    seed: int = 0
    """Seeds the noisy episodes (one generator per task and episode)."""
    rollout_dirs: list[str] = Field(default_factory=list)
    """DAgger: ``amc run`` output folders of a prior's own rollouts; every state they reached
    is labelled with the planner's action there (:mod:`amc.sft.dagger`) and joins the pairs
    (same leak check: their tasks must be allowed demonstration tasks)."""


class SFTOptions(Frozen):
    """One SFT run (``amc sft``; the ``sft`` section of params.yaml for the DVC stage)."""

    env: str = "textcraft"
    """Environment registry name (its benchmark record must have a planner)."""
    env_options: dict[str, Any] = Field(
        default_factory=lambda: {"min_depth": 1, "max_depth": 3, "n_distractors": 10})
    """Environment options: the tasks demonstrated (TextCraft: depths 1-3, 10 distractors)."""
    demos: DemoOptions = Field(default_factory=DemoOptions)
    """Where the demonstrations come from."""
    model: str = "embedded:gemma-3-270m"
    """Base model: HF id or directory; embedded:<name> converts the bundled GGUF once."""
    prompt: Style = "menu"
    """The prompt style the prior will use at run time (menu: numbered valid actions)."""
    few_shot: bool = False
    """Show the solved example in the prompt (the run-time prior must use the same)."""
    instruction: bool = False
    """Show the instruction in the prompt (the run-time prior must use the same)."""
    max_history_steps: int = Field(30, ge=1)
    """Most recent steps shown (the hf prior's option of the same name)."""
    menu_limit: int = Field(60, ge=1)
    """Most valid actions listed (the hf prior's option of the same name)."""
    lora_r: int = Field(16, ge=1)
    """LoRA rank."""
    lora_alpha: int = Field(32, ge=1)
    """LoRA scaling numerator (scale = alpha / r)."""
    lora_targets: list[str] = Field(default_factory=lambda: [
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    """Module names that get adapters."""
    lora_top_layers: int | None = Field(8, ge=1)
    """Adapt only the top K decoder layers (None = all): gradients stop below them."""
    lr: float = Field(5e-4, gt=0)
    """AdamW learning rate (constant after a linear warm-up)."""
    warmup_steps: int = Field(10, ge=0)
    """Optimiser steps of linear warm-up."""
    epochs: float = Field(2.0, gt=0)
    """Passes over the demonstrations (fractions allowed)."""
    max_steps: int | None = Field(None, ge=1)
    """Stop after this many optimiser steps (None: ``epochs`` decides)."""
    init_adapter: str | None = None
    """Start from this adapter folder's LoRA weights (same rank, targets and layers) instead
    of a fresh initialisation: a DAgger round continues the checkpoint that played."""
    batch_tokens: int = Field(4096, ge=64)
    """Most (padded) tokens per optimiser step: batches are grouped by length under this cap
    (an uncapped batch of long prompts took 24 GB)."""
    checkpoint_every: int = Field(50, ge=1)
    """Optimiser steps between kept checkpoints (skill is a dial: each is a candidate prior)."""
    holdout_fraction: float = Field(0.05, ge=0, lt=1)
    """Share of demonstration *tasks* whose pairs are only scored (validation loss and greedy
    action accuracy at each checkpoint), never trained on."""
    device: str = "auto"
    """cuda, cpu or auto."""
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    """Weights dtype; auto = bfloat16 on GPU, float32 on CPU."""
    threads: int | None = Field(None, ge=1)
    """torch CPU threads (None: torch's default)."""
    seed: int = 0
    """Seeds LoRA's initialisation, the batch order and the holdout draw."""
    out_dir: str = "models/sft"
    """Demonstrations, checkpoints, the final adapter, curve.jsonl and metrics.json."""
    model_name: str | None = None
    """Registered model name; None = amc-policy-<env>."""
    track: bool = True
    """Log an MLflow run and register the adapter."""
    tracking_uri: str | None = None
    """MLflow store (None = $MLFLOW_TRACKING_URI or sqlite:///mlruns/mlflow.db)."""

    @property
    def registered_name(self) -> str:
        return self.model_name or f"amc-policy-{self.env}"

    def prior_options(self) -> dict[str, Any]:
        """The ``hf`` prior options that render exactly the training prompts."""
        return {"model": self.model, "prompt": self.prompt, "few_shot": self.few_shot,
                "instruction": self.instruction, "max_history_steps": self.max_history_steps,
                "menu_limit": self.menu_limit}
