"""Dry run: how many calls and how many dollars a run would cost, before spending anything.

For every (method, seed, task) the policy makes at most N x T calls (N particles, T steps);
LLM-prompted values (``zero-shot``, ``foa``, ``zero-shot-yesno``) add N calls per value
evaluation. Prompt tokens are measured on the real first prompt of each task (the environment
is reset and the prior's own prompt builder renders it; tokens ~ characters / 4) and grow by
``tokens_per_step`` per step of history; completions are ``completion_tokens`` each. Dollars
come from the priors' versioned price table. The numbers are upper bounds on calls (particles
that finish early make fewer) and estimates of tokens; nothing is sent to any model and no key
is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from amc.config import MethodConfig, RunConfig
from amc.registry import ENVIRONMENTS, PRIORS
from amc.runner import resolve_methods, task_list
from amc.types import History

if TYPE_CHECKING:
    from amc.priors.prompts import Style

LLM_VALUES = ("zero-shot", "foa", "zero-shot-yesno")


@dataclass(frozen=True)
class Estimate:
    """Calls, tokens and dollars of one method over all tasks and seeds."""

    method: str
    policy_calls: int
    value_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None


def _first_prompt_tokens(cfg: RunConfig, tasks: list[str]) -> list[int]:
    """Tokens (chars / 4) of the prior's first prompt for each task."""
    from amc.priors.prompts import chat_messages, completion_prompt

    opts = PRIORS.validate(cfg.prior.name, cfg.prior.options)
    style = cast("Style", getattr(opts, "prompt", "react"))
    endpoint = getattr(opts, "endpoint", "chat")
    suite = ENVIRONMENTS.build(cfg.env.name, cfg.env.options)
    out = []
    try:
        for t in tasks:
            env = suite.make()
            try:
                h = History(t, env.reset(t))
                acts = env.valid_actions() if style == "menu" else None
                h = h.with_valid_actions(acts)
            finally:
                env.close()
            if endpoint == "chat":
                text = "".join(m["content"] for m in chat_messages(h, cfg.env.name, style))
            else:
                text = completion_prompt(h, cfg.env.name, style)
            out.append(len(text) // 4)
    finally:
        suite.close()
    return out


def _value_evaluations(m: MethodConfig) -> int:
    s = m.smc
    if s.resample == "never" or m.value.name not in LLM_VALUES:
        return 0
    if s.resample == "ess":
        return s.max_steps - 1
    return sum(1 for k in set(s.resample_steps) if k < s.max_steps)


def estimate(cfg: RunConfig, *, tokens_per_step: int = 60,
             completion_tokens: int = 80) -> list[Estimate]:
    """Per-method estimates for ``cfg`` (see the module docstring)."""
    from amc.priors.ledger import cost_usd, lookup_price

    methods = resolve_methods(cfg)
    suite = ENVIRONMENTS.build(cfg.env.name, cfg.env.options)
    try:
        tasks = task_list(cfg, suite)
    finally:
        suite.close()
    p0 = _first_prompt_tokens(cfg, tasks)
    model = str((cfg.prior.options or {}).get("model", "gpt-4.1-mini"))
    price = lookup_price("local" if cfg.prior.name in ("embedded", "hf") else model)
    rows = []
    for m in methods:
        n, steps, seeds = m.smc.n_particles, m.smc.max_steps, len(cfg.seeds)
        calls = n * steps * len(tasks) * seeds
        # mean prompt over a trajectory: first prompt + half the history growth
        prompt = sum(n * steps * (p + tokens_per_step * (steps - 1) // 2) for p in p0) * seeds
        vcalls = n * _value_evaluations(m) * len(tasks) * seeds
        vprompt = vcalls * (sum(p0) // max(len(p0), 1) + tokens_per_step * steps // 2)
        completion = calls * completion_tokens + vcalls * 10
        cost = None if price is None else cost_usd(price, prompt + vprompt, completion)
        rows.append(Estimate(m.name, calls, vcalls, prompt + vprompt, completion, cost))
    return rows


def format_estimate(rows: list[Estimate], cfg: RunConfig) -> str:
    """A plain-text table plus totals."""
    head = ["method", "policy calls ≤", "value calls ≤", "prompt tok", "completion tok", "$"]
    body = [[r.method, f"{r.policy_calls:,}", f"{r.value_calls:,}", f"{r.prompt_tokens:,}",
             f"{r.completion_tokens:,}", "unknown" if r.cost_usd is None else f"{r.cost_usd:.2f}"]
            for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    total = sum(r.cost_usd or 0.0 for r in rows)
    calls = sum(r.policy_calls + r.value_calls for r in rows)
    info: dict[str, Any] = {"env": cfg.env.name, "prior": cfg.prior.name,
                            "model": (cfg.prior.options or {}).get("model", "-"),
                            "seeds": len(cfg.seeds)}
    return "\n".join([
        "dry run: " + ", ".join(f"{k}={v}" for k, v in info.items()),
        fmt.format(*head), fmt.format(*("-" * w for w in widths)),
        *(fmt.format(*b) for b in body),
        f"total: at most {calls:,} calls, about ${total:.2f}",
    ])
