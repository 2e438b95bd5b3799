"""Next-token log-probabilities from an OpenAI-compatible endpoint: the request and its answer.

A one-token, greedy request with ``logprobs`` asks the server for the most likely candidates of
the next token and their log-probabilities -- what a value reads a base model's belief from
(:mod:`amc.value.yesno`). Three answer shapes exist and all are read:

- the completions API's (OpenAI's legacy shape, llama-cpp-python's server):
  ``choices[0].logprobs.top_logprobs[0] = {token: logprob, ...}``;
- the chat API's, which llama.cpp's ``llama-server`` also uses on ``/v1/completions``:
  ``choices[0].logprobs.content[0].top_logprobs = [{token, logprob}, ...]``.

The request sends ``logprobs`` in the endpoint's form (a count on completions; ``true`` plus
``top_logprobs`` on chat) and ``n_probs`` too (llama-server's own name; other servers ignore
an unknown field). An answer without log-probabilities raises :class:`NoLogprobs`: the server
does not offer them (e.g. llama-cpp-python started without ``logits_all``), so a retry would
not help. The candidates travel through the prior's response cache as a JSON text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from amc.priors.transport import MalformedResponse

MAX_TOP = 20
"""The most candidates the OpenAI API returns (``top_logprobs`` <= 20)."""


class NoLogprobs(ValueError):
    """The endpoint answered without token log-probabilities (not retried)."""


def logprobs_request(model: str, endpoint: str, prompt: str, top: int) -> dict[str, Any]:
    """A greedy one-token request for the ``top`` most likely next tokens after ``prompt``."""
    if not 1 <= top <= MAX_TOP:
        raise ValueError(f"top must be in 1..{MAX_TOP}, got {top}")
    req: dict[str, Any] = {"model": model, "max_tokens": 1, "temperature": 0.0, "n_probs": top}
    if endpoint == "chat":
        req.update(messages=[{"role": "user", "content": prompt}], logprobs=True,
                   top_logprobs=top)
    else:
        req.update(prompt=prompt, logprobs=top)
    return req


def _candidates(logprobs: Mapping[str, Any]) -> dict[str, float]:
    """``{token: logprob}`` of the first generated token, from either answer shape."""
    legacy = logprobs.get("top_logprobs")
    if isinstance(legacy, list) and legacy and isinstance(legacy[0], Mapping):
        return {str(t): float(lp) for t, lp in legacy[0].items()}
    content = logprobs.get("content")
    if isinstance(content, list) and content and isinstance(content[0], Mapping):
        first = content[0]
        out = {str(c["token"]): float(c["logprob"]) for c in first.get("top_logprobs") or ()
               if isinstance(c, Mapping) and "token" in c and "logprob" in c}
        if "token" in first and "logprob" in first:  # the chosen token, if not among them
            out.setdefault(str(first["token"]), float(first["logprob"]))
        if out:
            return out
    raise NoLogprobs("the endpoint answered without next-token log-probabilities")


def read_top_logprobs(resp: Any, endpoint: str) -> tuple[str, tuple[int, int, int]]:
    """The candidates as a JSON text and the call's (prompt, completion, cached) tokens.

    Shaped like the prior's plain reader, so the answer goes through the same retries, ledger
    and response cache. Non-finite log-probabilities (-inf: impossible tokens) are dropped.
    """
    if not isinstance(resp, dict) or not isinstance(resp.get("choices"), list) or not (
            resp["choices"] and isinstance(resp["choices"][0], dict)):
        raise MalformedResponse("no choices in the answer")
    logprobs = resp["choices"][0].get("logprobs")
    if not isinstance(logprobs, Mapping):
        raise NoLogprobs("the endpoint answered without next-token log-probabilities "
                         f"({endpoint}: no 'logprobs' in the choice; does it support them?)")
    top = {t: lp for t, lp in _candidates(logprobs).items() if math.isfinite(lp)}
    u = resp.get("usage") or {}
    cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return json.dumps(top, sort_keys=True), (int(u.get("prompt_tokens") or 0),
                                              int(u.get("completion_tokens") or 0), int(cached))
