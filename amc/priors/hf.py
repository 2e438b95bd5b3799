"""Prior ``hf``: an in-process transformers causal LM, batched across particles (GPU users).

Proposals that arrive together (the SMC driver gathers all particles of a step) are collected
by a micro-batcher -- up to ``batch_size`` requests, waiting at most ``batch_wait_ms`` after the
first -- and decoded in one left-padded batch with a KV cache, in a worker thread so the event
loop keeps running. Each row samples with its *own* ``torch.Generator`` seeded from the
request seed the particle's generator supplied, so a particle's sample does not depend on
which other particles share its batch (up to floating-point effects of padding).

KV reuse (``kv_reuse``, default on; :mod:`amc.priors.kv_cache`): each prompt is prefilled
alone on the longest token prefix it shares with a recent prompt -- a particle's previous
step, its parent's after a resampling -- so a step runs only the particle's new tokens (the
last steps and the menu) and a prompt seen before runs none; the rows are then decoded in one
batch from which stopped rows drop out. Same distribution as a whole prefill: logits within
~1e-5 (fp32), identical seeded samples in the tests (tests/priors/test_kv_cache.py).

Sampling is temperature, then top-k, then top-p (llama.cpp-like truncation; measured: pure
temperature sampling makes small models markedly worse). Prompts are the same renderings as
the API priors: the few-shot completion transcript (default; stops at the newline) or the
tokenizer's chat template over :func:`~amc.priors.prompts.chat_messages`.

``model`` is a Hugging Face id or directory; ``embedded:gemma-3-270m`` converts the bundled
GGUF once into fp32 safetensors under ``$AMC_CACHE/models`` (transformers 5 refuses to save a
GGUF-loaded model until its quantizer marker is cleared). An alternative for large models is
to serve them with vLLM and use prior ``openai`` with ``base_url``.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field

from amc.config import Frozen
from amc.priors.cache import default_cache_dir
from amc.priors.ledger import Budget, Ledger
from amc.priors.parsing import parse_action
from amc.priors.prompts import Style, chat_messages, completion_prompt
from amc.protocols import NextTokenLogprobs
from amc.registry import PRIORS
from amc.types import INVALID_ACTION, AgentTurn, History, Usage

if TYPE_CHECKING:  # torch is imported when a model loads, not with the registry
    from amc.priors.kv_cache import PrefixCache


class HFOptions(Frozen):
    """A local causal LM and how to sample from it."""

    model: str = "embedded:gemma-3-270m"
    """HF model id or directory; embedded:<name> converts a bundled GGUF once."""
    chat_template: bool = False
    """Render chat messages with the tokenizer's template instead of a few-shot transcript."""
    prompt: Style = "menu"
    """menu, react or reflact."""
    few_shot: bool = True
    """Show the solved example (False, with ``instruction`` False: the compact prompt an SFT
    adapter is trained on, :mod:`amc.sft`)."""
    instruction: bool = True
    """Show the task instruction (False: see ``few_shot``)."""
    temperature: float = Field(1.0, gt=0)
    """Sampling temperature."""
    top_k: int = Field(40, ge=0)
    """Keep the k most likely tokens (0 = off)."""
    top_p: float = Field(0.95, gt=0, le=1)
    """Nucleus mass kept after top-k."""
    max_new_tokens: int = Field(48, ge=1)
    """Output cap per turn (completion mode stops at the first newline)."""
    batch_size: int = Field(16, ge=1)
    """Most proposals decoded together."""
    batch_wait_ms: float = Field(5.0, ge=0)
    """How long the first proposal waits for others to join its batch."""
    device: str = "auto"
    """cuda, cpu or auto (cuda when available)."""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """Weights dtype; auto = bfloat16 on GPU, float32 on CPU."""
    max_history_steps: int = Field(30, ge=1)
    """Most recent steps shown in the prompt."""
    menu_limit: int = Field(60, ge=1)
    """Most valid actions listed in a menu prompt."""
    budget_tokens: int | None = Field(None, ge=1)
    """Per-task token cap."""
    adapter: str | None = None
    """A LoRA adapter on top of ``model`` (``amc grpo``'s policy): a folder, or a
    ``models:/amc-policy-<env>/<version>`` / ``runs:/`` URI of the MLflow registry."""
    kv_reuse: bool = True
    """Prefill only the tokens a prompt does not share with a recently seen one
    (:mod:`amc.priors.kv_cache`; same distribution: logits within ~1e-4 of a full prefill)."""
    kv_cache_entries: int = Field(32, ge=1)
    """Most prompts whose KV is kept for reuse (keep it >= the particles of a step)."""
    kv_cache_tokens: int = Field(16384, ge=1)
    """Most tokens kept over those prompts (Gemma-3-270M fp32: ~38 KB a token, ~620 MB)."""


def converted_model_dir(name: str, cache_dir: Path | None = None) -> Path:
    """A bundled GGUF model as fp32 safetensors, converted once (about 1 GB for Gemma)."""
    import fcntl

    from amc.priors.embedded import model_path

    root = cache_dir or default_cache_dir() / "models"
    out = root / f"{name}-hf"
    if (out / "config.json").exists():
        return out
    gguf = model_path(name, root)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{name}-hf.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "config.json").exists():
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                         dtype=torch.float32)
            model.hf_quantizer = None  # type: ignore[assignment]  # GGUF loads: else unsaveable
            model.config.__dict__.pop("quantization_config", None)
            tmp = out.with_name(out.name + ".part")
            model.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            tmp.rename(out)
    return out


def load_base_lm(model: str, device: str, dtype: str, seed: int) -> tuple[Any, Any, Any]:
    """``(model, tokenizer, torch.device)`` of a base causal LM to put LoRA adapters on:
    ``embedded:<name>`` converts the bundled GGUF once; device ``auto`` = cuda when available;
    dtype ``auto`` = bfloat16 on a GPU, float32 on the CPU. torch is seeded *before* loading,
    so the LoRA initialisation that follows is the same for GRPO and SFT runs of one seed."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path: str | Path = model
    if model.startswith("embedded:"):
        path = converted_model_dir(model.split(":", 1)[1])
    cuda = torch.cuda.is_available()
    dev = torch.device(device if device != "auto" else ("cuda" if cuda else "cpu"))
    dt = {"auto": torch.bfloat16 if dev.type == "cuda" else torch.float32,
          "float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    torch.manual_seed(seed)  # LoRA's A matrices are initialised randomly
    tok = AutoTokenizer.from_pretrained(path)
    return AutoModelForCausalLM.from_pretrained(path, dtype=dt), tok, dev


def truncated(logits: Any, top_k: int, top_p: float) -> tuple[Any, Any]:
    """Top-k then top-p truncation of each row: ``(probs, ids)``, each (B, m), the kept
    tokens' probabilities (a dropped token's is 0; rows unnormalised) and their ids, by
    descending probability. Only the k largest logits are sorted and drawn from: a sort or a
    draw over Gemma's 262k-token vocabulary costs milliseconds a row (measured: a multinomial
    draw 5 ms), the k-token ones microseconds. k = 0: no top-k (the whole vocabulary, sorted
    only when top-p needs it)."""
    import torch

    v = logits.shape[-1]
    if not top_k and top_p >= 1:
        ids = torch.arange(v, device=logits.device).expand(logits.shape[0], v)
        return torch.softmax(logits, -1), ids
    vals, ids = torch.topk(logits, min(top_k, v) if top_k else v, dim=-1)  # descending
    probs = torch.softmax(vals, -1)
    if top_p < 1:  # keep the smallest prefix with mass >= top_p
        probs = probs.masked_fill(probs.cumsum(-1) - probs > top_p, 0.0)
    return probs, ids


def _foldable_input(_module: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The output head's input as a fresh contiguous tensor.

    With ``logits_to_keep=1`` transformers hands the head the last position as a (B, 1, H)
    *view* whose batch stride is the whole sequence's. For such a view and a weight that needs
    no gradient (a merged adapter's) ``torch.matmul`` does not fold the batch into one matrix
    product but runs a batched product with the weight expanded, and on the CPU in bfloat16
    that copies the transposed 262k x 640 head at every prefill (measured: 0.7 s a call against
    0.02 s folded). A copy of the (B, 1, H) rows costs nothing and folds.
    """
    import torch

    return (args[0].clone(memory_format=torch.contiguous_format), *args[1:])


@dataclass
class _Request:
    prompt: str
    seed: int
    future: asyncio.Future[tuple[str, int, int]]


class HFPrior(NextTokenLogprobs):
    """Batched local sampling behind the :class:`~amc.protocols.Prior` protocol; also the next
    token's log-probabilities (:class:`~amc.protocols.NextTokenLogprobs`, yes/no values)."""

    def __init__(self, options: HFOptions, env: str = "generic") -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from amc.priors.decode import newline_tokens
        from amc.priors.kv_cache import PrefixCache

        self.options, self.env = options, env
        path: str | Path = options.model
        if options.model.startswith("embedded:"):
            path = converted_model_dir(options.model.split(":", 1)[1])
        cuda = torch.cuda.is_available()
        self.device = torch.device("cuda" if options.device == "auto" and cuda else
                                   ("cpu" if options.device == "auto" else options.device))
        dtype = {"auto": torch.bfloat16 if self.device.type == "cuda" else torch.float32,
                 "float32": torch.float32, "bfloat16": torch.bfloat16,
                 "float16": torch.float16}[options.dtype]
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        if options.adapter is not None:
            from amc.priors.adapter import merge_adapters

            # Merged into the base weights (after the SFT adapter a GRPO policy started from):
            # decoding then costs what the frozen model costs.
            model = merge_adapters(model, options.adapter)
        self.model = model.to(self.device)  # type: ignore[arg-type]  # stubs: to(device) is fine
        self.model.eval()
        self.model.get_output_embeddings().register_forward_pre_hook(_foldable_input)
        self.name = str(options.model) + (f"+{options.adapter}" if options.adapter else "")
        # Token ids whose text holds a newline end a completion-mode turn.
        self._newline = newline_tokens(self.tokenizer, self.device)
        self.ledger = Ledger(Budget(max_tokens=options.budget_tokens))
        self._queue: asyncio.Queue[_Request] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._gpu_lock = threading.Lock()
        self.prefix_cache: PrefixCache | None = None
        if options.kv_reuse:
            self.prefix_cache = PrefixCache(options.kv_cache_entries, options.kv_cache_tokens)
        """KV of recent prompts (None: every prompt is prefilled whole)."""
        self.batches: list[int] = []
        """Size of every decoded batch (how well proposals were grouped)."""

    @property
    def wants_valid_actions(self) -> bool:
        """The menu prompt lists the environment's valid actions: ask the driver for them."""
        return self.options.prompt == "menu"

    def render(self, history: History) -> str:
        o = self.options
        kw = {"max_steps": o.max_history_steps, "menu_limit": o.menu_limit}
        if o.chat_template:
            msgs = chat_messages(history, self.env, o.prompt, **kw)
            text = self.tokenizer.apply_chat_template(msgs, tokenize=False,
                                                      add_generation_prompt=True)
            assert isinstance(text, str)  # tokenize=False returns the text
            return text
        return completion_prompt(history, self.env, o.prompt, few_shot=o.few_shot,
                                 instruction=o.instruction, **kw)

    # -- batched decoding (runs in a worker thread) ------------------------------------------
    def generate(self, prompts: list[str], seeds: list[int]) -> list[tuple[str, int, int]]:
        """``(text, prompt tokens, completion tokens)`` per prompt, one batched decode."""
        import torch

        from amc.priors.decode import decode_batch, decode_loop
        from amc.priors.kv_cache import merge, prefill

        o, tok, b = self.options, self.tokenizer, len(prompts)
        gens = [torch.Generator(device=self.device).manual_seed(s) for s in seeds]
        stop_at_newline = not o.chat_template
        kw: dict[str, Any] = {"eos_id": tok.eos_token_id, "pad_id": tok.pad_token_id,
                              "newline": self._newline if stop_at_newline else None}

        def draw(logits: Any, rows: Any) -> Any:
            # Only the tokens top-k and top-p keep are drawn from, one draw per row from the
            # row's own generator (batch-independent samples).
            probs, ids = truncated(logits / o.temperature, o.top_k, o.top_p)  # (A, m) each
            pick = torch.cat([torch.multinomial(probs[j], 1, generator=gens[r])
                              for j, r in enumerate(rows.tolist())])
            return ids.gather(1, pick[:, None])[:, 0]

        with self._gpu_lock, torch.inference_mode():
            if self.prefix_cache is not None:  # each prompt prefilled alone on its cached prefix
                rows = [[int(t) for t in tok(p)["input_ids"]] for p in prompts]
                entries = [prefill(self.model, self.prefix_cache, r) for r in rows]
                cache, attn, last = merge(entries)  # left-padded, rows end at the same slot
                logits = torch.stack([e.logits for e in entries])  # (B, V)
                out, lengths = decode_loop(self.model, logits, cache, attn, last,
                                           o.max_new_tokens, draw, drop_finished=True, **kw)
                n_prompt = [len(r) for r in rows]
            else:
                enc = tok(prompts, return_tensors="pt", padding=True,
                          padding_side="left").to(self.device)
                ids, attn = enc["input_ids"], enc["attention_mask"]  # (B, L)
                out, lengths = decode_batch(self.model, ids, attn, o.max_new_tokens, draw, **kw)
                n_prompt = [int(n) for n in attn.sum(-1)]
        results = []
        for i in range(b):
            text = str(tok.decode(out[i, : int(lengths[i])], skip_special_tokens=True))
            if stop_at_newline:
                text = text.split("\n", 1)[0]
            results.append((text, n_prompt[i], int(lengths[i])))
        return results

    # -- micro-batcher -----------------------------------------------------------------------
    async def _run_worker(self) -> None:
        assert self._queue is not None
        while True:
            batch = [await self._queue.get()]
            deadline = asyncio.get_running_loop().time() + self.options.batch_wait_ms / 1000
            while len(batch) < self.options.batch_size:
                timeout = deadline - asyncio.get_running_loop().time()
                try:
                    batch.append(await asyncio.wait_for(self._queue.get(), max(timeout, 0)))
                except TimeoutError:
                    break
            self.batches.append(len(batch))
            try:
                res = await asyncio.to_thread(self.generate, [r.prompt for r in batch],
                                              [r.seed for r in batch])
                for r, x in zip(batch, res, strict=True):
                    r.future.set_result(x)
            except Exception as err:  # fail this batch's particles, keep serving
                for r in batch:
                    if not r.future.done():
                        r.future.set_exception(err)

    async def propose(self, history: History, rng: np.random.Generator) -> AgentTurn:
        """Sample one agent turn; concurrent calls are decoded as one batch."""
        seed = int(rng.integers(0, 2**31 - 1))
        stop = self.ledger.exhausted(history.task_id)
        if stop:
            return AgentTurn(raw_text="", action=INVALID_ACTION, error=stop)
        loop = asyncio.get_running_loop()
        if self._worker is None or self._worker.get_loop() is not loop or self._worker.done():
            self._queue = asyncio.Queue()
            self._worker = loop.create_task(self._run_worker())
        fut: asyncio.Future[tuple[str, int, int]] = loop.create_future()
        assert self._queue is not None
        await self._queue.put(_Request(self.render(history), seed, fut))
        try:
            text, n_prompt, n_out = await fut
        except Exception as err:
            return AgentTurn("", INVALID_ACTION, error=f"local generation failed: {err}"[:300])
        usage = Usage(prompt_tokens=n_prompt, completion_tokens=n_out, calls=1)
        self.ledger.record(history.task_id, usage)
        action = parse_action(text, self.env, history.valid_actions,
                              prefilled=not self.options.chat_template)
        return AgentTurn(raw_text=text, action=action, usage=usage)

    def top_next_tokens(self, prompt: str, top: int) -> tuple[dict[str, float], int]:
        """The ``top`` most likely next tokens after ``prompt`` with their log-probabilities
        under the model's own distribution (no temperature, no truncation) and the prompt's
        length in tokens. Tokens that decode to the same text share one entry (their
        probabilities added)."""
        import torch

        enc = self.tokenizer(prompt, return_tensors="pt").to(self.device)
        with self._gpu_lock, torch.inference_mode():
            logits = self.model(**enc, logits_to_keep=1).logits[0, -1].float()
        values, ids = torch.topk(torch.log_softmax(logits, -1), top)
        out: dict[str, float] = {}
        for lp, i in zip(values.tolist(), ids.tolist(), strict=True):
            text = str(self.tokenizer.decode([i]))
            out[text] = float(np.logaddexp(out[text], lp)) if text in out else float(lp)
        return out, int(enc["input_ids"].shape[1])

    async def next_token_logprobs(self, prompt: str, *, top: int = 20
                                  ) -> tuple[dict[str, float], Usage]:
        """:class:`~amc.protocols.NextTokenLogprobs` in process: one forward pass (in a worker
        thread), recorded in the ledger as a value call."""
        candidates, n_prompt = await asyncio.to_thread(self.top_next_tokens, prompt, top)
        usage = Usage(prompt_tokens=n_prompt, calls=1)
        self.ledger.record("<value>", usage)
        return candidates, usage

    async def aclose(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None


@PRIORS.register("hf", options=HFOptions)
def make_hf_prior(options: HFOptions, *, env_name: str = "generic", **_: object) -> HFPrior:
    """Local transformers causal LM, batched across particles (GPU users)."""
    return HFPrior(options, env=env_name)
