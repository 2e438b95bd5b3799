"""What reading a state costs on this machine, measured: the LLM candidates against MiniLM.

On ``COST_STATES`` real states (``COST_STATES_YESNO`` for each yes/no reading) of the
fine-tuned prior (a seeded draw of the non-terminal prefixes of the committed regime-search
rollouts of checkpoint 50 at depth 2, the only kept cell when the protocol was declared),
with the adapter of the particle-step benchmark (checkpoint 150: every kept checkpoint is the
same network, merged into the base weights, so it costs the same), ``threads`` torch threads,
after loading:

- ``llm-hidden``: the prior's prompt (compact transcript + menu, the menu replayed) and one
  forward pass returning the hidden states (:func:`~.reader.hidden_features`, batches of 8);
- ``llm-yesno`` / ``llm-yesno-compact``: one forward pass to the next token's
  log-probabilities per state (:func:`~.reader.yesno_values`, batches of 8);
- ``minilm``: the frozen MiniLM-L6 embedding of the goal-kept rendering (no cache).

Each gives wall seconds, this process's CPU seconds (all threads), states/s and CPU s per
state; the 1-minute load average before and after is recorded (the machine is shared: a
loaded machine makes every figure slower, so a sizing on it is conservative).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from studies.sft_prior.value import reader, states

REPO = reader.REPO
COST_ROLLOUTS = REPO / "evidence/sft-prior/regime-search/step-000050/depth2"
COST_ADAPTER = "sft/kept/textcraft/step-000150"
COST_STATES = 20
"""States the hidden-state reading is timed on."""
COST_STATES_YESNO = 10
"""States each yes/no reading is timed on (the first of the same draw: the CPU limit of a
measurement on the shared machine)."""
COST_SEED = 62


def sample_states(n: int = COST_STATES, seed: int = COST_SEED) -> list[Any]:
    """A seeded draw of ``n`` non-terminal prefixes of the committed rollouts (horizon 10)."""
    t = states.table(states.load(COST_ROLLOUTS), 10, 8, None)
    live = np.flatnonzero(~t.last)
    pick = np.sort(np.random.default_rng(seed).choice(live, min(n, live.size), replace=False))
    return [t.histories[i] for i in pick]


def _timed(fn: Callable[[], Any], n: int) -> dict[str, float]:
    w, c = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    return {"states": float(n), "wall_s": wall, "cpu_s": cpu, "states_per_s": n / wall,
            "cpu_s_per_state": cpu / n}


def measure(n: int = COST_STATES, n_yesno: int = COST_STATES_YESNO, threads: int = 2
            ) -> dict[str, Any]:
    """The rates of the module docstring."""
    import tempfile

    from amc.value.features import FeatureCache, embed_texts, encoder_identity
    from studies.value_options.states import encoder, renderer

    hs = sample_states(n)
    load_before = os.getloadavg()[0]
    cfg = reader.ReaderConfig(adapter=COST_ADAPTER, depth=2, threads=threads)
    w = time.perf_counter()
    prior = reader.load_prior(cfg)
    load_s = time.perf_counter() - w
    suite = reader.suite_for(2)
    rates = {
        "llm-hidden": _timed(lambda: reader.hidden_features(
            prior.model, prior.tokenizer, reader.prompts(prior, hs, suite), cfg.layers,
            cfg.batch_size, cfg.max_tokens), n),
        "llm-yesno": _timed(lambda: reader.yesno_values(prior, hs[:n_yesno], "value"),
                            n_yesno),
        "llm-yesno-compact": _timed(lambda: reader.yesno_values(prior, hs[:n_yesno],
                                                                "compact"), n_yesno),
    }
    model, tok = encoder()
    texts = [renderer("goal-kept", tok)(h) for h in hs]
    with tempfile.TemporaryDirectory() as tmp:  # an empty cache: every state embedded
        cache = FeatureCache(Path(tmp), encoder_identity(model, tok))
        rates["minilm"] = _timed(lambda: embed_texts(model, tok, texts, cache, 64,
                                                     progress=False), n)
    tokens = [len(prior.tokenizer(p)["input_ids"]) for p in reader.prompts(prior, hs, suite)]
    return {"rates": rates, "states": n, "threads": threads, "model_load_s": load_s,
            "adapter": COST_ADAPTER,
            "rollouts": str(Path(COST_ROLLOUTS).relative_to(REPO)), "seed": COST_SEED,
            "prompt_tokens_mean": float(np.mean(tokens)),
            "load_average_1m_before": load_before,
            "load_average_1m_after": os.getloadavg()[0], "cpus": os.cpu_count(),
            "nice": os.nice(0)}
