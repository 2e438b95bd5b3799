"""Rounds: every retraining is a numbered round of *fresh* prior rollouts.

Without rounds, a scheduled retraining re-runs collect with the same ``collect.seeds``: collect
resumes, finds every task done, and the loop retrains on the same data forever. With
``rounds.enabled`` each retraining is round ``r = 0, 1, 2, ...``:

- **Fresh seeds.** A round collects with the seed block ``base + s`` for each ``s`` in
  ``collect.seeds`` (every ``s`` must be below ``rounds.seed_stride``), where ``base`` is the
  first multiple of the stride past every seed already used (:func:`used_seeds`: earlier rounds'
  ledgers, the plain collect's ``collect.seeds`` and its files in ``collect.out_dir``): round 0
  after a plain collect with seeds ``[0]`` gets ``[1000]``, never re-running seed 0. The ledger
  records the block (``seed_base``); opening a round asserts none of its seeds was used.
- **Append-only store.** Round r's rollouts go to ``<collect.out_dir>/round-<r:04d>/`` (the
  usual ``bon@G__seed<k>.jsonl`` files and ``manifest.json``); nothing else is written there,
  and a closed round is never written again (:func:`record_step` refuses). The whole
  ``collect.out_dir`` stays the DVC output of the collect stage.
- **Dataset window.** The dataset stage builds one dataset from the rounds ``(r - window, r]``
  (``rounds.window``; None = every round), so each round produces a new dataset version
  (``dvc commit`` records its hash in ``dvc.lock``; the training run logs it as its input).
- **Ledger.** ``<rounds.ledger_dir>/round-<r:04d>.json``: status (``open`` or ``closed``),
  seeds, the prior's identity (:func:`prior_identity`), and each step's result (``collect``,
  ``dataset``, ``train``, ``promote``), written atomically by the stages themselves.

Lifecycle: the collect stage opens the round (:func:`open_round`: resumes the one open round,
else opens ``last + 1``), the stages record their steps, the promote stage closes it. A crash
leaves the round open: the next run resumes it (collect skips finished tasks, training reuses a
version already registered for the same dataset) and earlier rounds stay byte-identical.
Only one round is open at a time; open it once before fanning out (the flows do).

``python -m amc.pipeline.round [params.yaml]`` runs one whole round in this process
(:func:`amc.pipeline.round.run_round`: every stage's ``run``, each followed by ``dvc commit -f
<stage>`` in a DVC project), as the scheduled Prefect flow does. This module holds only the
round's state, which the stages use; the stage table sits above them, in :mod:`.round`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path
from typing import Any

from amc.pipeline.params import PipelineParams
from amc.results import write_json_atomic

"""The stages of a round, in order."""
SECRET_WORDS = ("key", "token", "secret", "password")
"""Option names containing these never enter the ledger."""


def enabled(p: PipelineParams) -> bool:
    """Whether the run uses rounds (``rounds.enabled``)."""
    return p.rounds.enabled


def round_dir(p: PipelineParams, r: int) -> Path:
    """Where round r's rollouts and manifest live."""
    return p.collect.out_dir / f"round-{r:04d}"


def ledger_path(p: PipelineParams, r: int) -> Path:
    """Round r's ledger record."""
    return p.rounds.ledger_dir / f"round-{r:04d}.json"


def round_seeds(p: PipelineParams, base: int) -> tuple[int, ...]:
    """A round's seed block: ``base + s`` for every s in ``collect.seeds``."""
    stride = p.rounds.seed_stride
    bad = [s for s in p.collect.seeds if not 0 <= s < stride]
    if bad:
        raise ValueError(f"collect.seeds {bad} must lie in [0, rounds.seed_stride={stride}) so "
                         "that rounds get disjoint seed blocks")
    return tuple(base + s for s in p.collect.seeds)


def used_seeds(p: PipelineParams) -> set[int]:
    """Every seed a collection already used or will use: the rounds' ledgers, the plain
    collect's ``collect.seeds`` and the seeds of its results files in ``collect.out_dir``."""
    used = {int(s) for rec in list_rounds(p) for s in rec["seeds"]} | set(p.collect.seeds)
    for f in p.collect.out_dir.glob("*__seed*.jsonl"):
        tail = f.stem.rsplit("__seed", 1)[-1]
        if tail.isdigit():
            used.add(int(tail))
    return used


def next_base(p: PipelineParams) -> int:
    """The first multiple of ``rounds.seed_stride`` past every used seed."""
    stride = p.rounds.seed_stride
    return (max(used_seeds(p), default=-1) // stride + 1) * stride


def list_rounds(p: PipelineParams) -> list[dict[str, Any]]:
    """Every ledger record, by round number."""
    recs = [json.loads(f.read_text()) for f in p.rounds.ledger_dir.glob("round-*.json")]
    return sorted(recs, key=lambda rec: int(rec["round"]))


def load_round(p: PipelineParams, r: int) -> dict[str, Any]:
    """Round r's ledger record (clear error when missing)."""
    path = ledger_path(p, r)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: round {r} was never opened")
    return json.loads(path.read_text())


def open_rounds(p: PipelineParams) -> list[dict[str, Any]]:
    """The records still open (at most one, unless the ledger was edited by hand)."""
    return [rec for rec in list_rounds(p) if rec["status"] == "open"]


def current_round(p: PipelineParams) -> dict[str, Any] | None:
    """The open round, if any (error when several are open)."""
    found = open_rounds(p)
    if len(found) > 1:
        raise RuntimeError(f"rounds {[rec['round'] for rec in found]} are all open in "
                           f"{p.rounds.ledger_dir}: close all but one")
    return found[0] if found else None


def active_round(p: PipelineParams) -> int | None:
    """The open round, else the latest one, else None (no round yet, or rounds off)."""
    if not enabled(p):
        return None
    rec = current_round(p)
    if rec is not None:
        return int(rec["round"])
    recs = list_rounds(p)
    return int(recs[-1]["round"]) if recs else None


def open_round(p: PipelineParams, adopt_base: int | None = None) -> dict[str, Any]:
    """Resume the open round, or open the next one (fresh seeds asserted); its record.

    ``adopt_base``: open it with that seed block instead of the next unused one, for a round
    that *adopts* rollouts already collected with those seeds (the kept files copied in by
    a study seeding round 0 from its kept files) rather than collecting them again; it must
    still be disjoint from every earlier round's seeds."""
    if not enabled(p):
        raise ValueError("rounds.enabled is false: set it in params.yaml to retrain in rounds")
    ident = prior_identity(p)
    rec = current_round(p)
    if rec is not None:
        if _comparable(rec["prior"]) != _comparable(ident):
            raise ValueError(f"round {rec['round']} was opened with prior {rec['prior']}, "
                             f"params now say {ident}: finish it with that prior first")
        return rec
    recs = list_rounds(p)
    r = int(recs[-1]["round"]) + 1 if recs else 0
    base = next_base(p) if adopt_base is None else adopt_base
    seeds = round_seeds(p, base)
    used = {int(s) for old in recs for s in old["seeds"]}
    reused = sorted(used & set(seeds))
    if reused:
        raise RuntimeError(f"round {r}: seeds {reused} were used by an earlier round; "
                           "rollouts of a round must be fresh (was rounds.seed_stride changed?)")
    if round_dir(p, r).exists() and any(round_dir(p, r).iterdir()):
        raise RuntimeError(f"{round_dir(p, r)} already holds files but round {r} has no "
                           "ledger record: refusing to mix rollouts")
    rec = {"round": r, "status": "open", "seeds": list(seeds), "seed_base": base, "prior": ident,
           "opened_at": _now(), "closed_at": None, "steps": {}}
    write_json_atomic(ledger_path(p, r), rec)
    return rec


def record_step(p: PipelineParams, r: int, step: str, info: dict[str, Any]) -> dict[str, Any]:
    """Store a step's result in round r's record (only while the round is open)."""
    rec = load_round(p, r)
    if rec["status"] != "open":
        raise RuntimeError(f"round {r} is closed: its record is never rewritten")
    rec["steps"][step] = info
    write_json_atomic(ledger_path(p, r), rec)
    return rec


def close_round(p: PipelineParams, r: int) -> dict[str, Any]:
    """Mark round r closed: the next collect opens round r + 1."""
    rec = load_round(p, r)
    if rec["status"] == "open":
        rec.update(status="closed", closed_at=_now())
        write_json_atomic(ledger_path(p, r), rec)
    return rec


def finish_round(p: PipelineParams, d: dict[str, Any]) -> dict[str, Any] | None:
    """After the promotion gate: store decision ``d`` in the open round and close it.

    A gate that saw an incomplete or failed evaluation leaves the round open (rerun to resume
    it). Returns the round's record (None without an open round).
    """
    rec = current_round(p) if enabled(p) else None
    if rec is None:
        return None
    r = int(rec["round"])
    keep = ("promote", "reason", "model", "challenger_version", "champion_version",
            "champion_after", "metric", "tested", "powered", "delta", "se", "p_value",
            "t_p_value", "mde", "lower_bound", "decision_level", "n_pairs", "n_tasks",
            "eval_status", "decided_at")
    rec = record_step(p, r, "promote", {k: d.get(k) for k in keep})
    return close_round(p, r) if d.get("eval_status") == "complete" else rec


def round_params(p: PipelineParams, rec: dict[str, Any]) -> PipelineParams:
    """``p`` with collect writing round ``rec``'s directory with its seed block."""
    r = int(rec["round"])
    base = int(rec.get("seed_base", r * p.rounds.seed_stride))
    if tuple(rec["seeds"]) != round_seeds(p, base):
        raise ValueError(f"round {r} was opened with seeds {rec['seeds']}, params now give "
                         f"{list(round_seeds(p, base))}: collect.seeds or rounds.seed_stride "
                         "changed mid-round")
    c = p.collect.model_copy(update={"out_dir": round_dir(p, r), "seeds": tuple(rec["seeds"])})
    return p.model_copy(update={"collect": c})


def collect_params(p: PipelineParams) -> PipelineParams:
    """The collect params of the open round (``p`` itself when rounds are off)."""
    if not enabled(p):
        return p
    rec = current_round(p)
    if rec is None:
        raise RuntimeError("no open round: open one first (amc.pipeline.rounds.open_round)")
    return round_params(p, rec)


def window(p: PipelineParams, r: int) -> list[int]:
    """The rounds a dataset of round r is built from: ``(r - window, r]``, all recorded."""
    lo = 0 if p.rounds.window is None else max(0, r - p.rounds.window + 1)
    have = {int(rec["round"]) for rec in list_rounds(p)}
    missing = [x for x in range(lo, r + 1) if x not in have]
    if missing:
        raise FileNotFoundError(f"rounds {missing} have no ledger record in "
                                f"{p.rounds.ledger_dir}")
    return list(range(lo, r + 1))


def prior_identity(p: PipelineParams) -> dict[str, Any]:
    """What the prior was: name, options (no secrets), declared and reported model, prompts.

    ``reported_models`` is what an OpenAI-compatible endpoint lists at ``<base_url>/models``
    (None when the prior has no ``base_url`` option or the endpoint does not answer in 5 s).
    """
    opts = {k: v for k, v in p.prior.options.items()
            if not any(w in k.lower() for w in SECRET_WORDS)}
    blob = json.dumps(opts, sort_keys=True, default=str)
    declared = next((str(opts[k]) for k in ("model", "model_path", "repo_id", "hf_file")
                     if opts.get(k)), None)
    return {"name": p.prior.name, "options": json.loads(blob), "model": declared,
            "options_sha256": hashlib.sha256(blob.encode()).hexdigest()[:16],
            "prompt_sha256": prompt_hash(p.env.name),
            "reported_models": reported_models(opts.get("base_url"))}


def prompt_hash(env: str) -> str:
    """Hash of the prompt set the LLM priors use for ``env`` (instruction, examples)."""
    from amc.priors.prompts import get_prompts

    blob = json.dumps(dataclasses.asdict(get_prompts(env)), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def reported_models(base_url: Any) -> list[str] | None:
    """Model ids an OpenAI-compatible endpoint reports (None: no endpoint or no answer)."""
    if not base_url:
        return None
    import httpx

    try:
        resp = httpx.get(f"{str(base_url).rstrip('/')}/models", timeout=5.0)
        resp.raise_for_status()
        return sorted(str(m.get("id")) for m in resp.json().get("data", []))
    except (httpx.HTTPError, ValueError, AttributeError):
        return None


def _comparable(ident: dict[str, Any]) -> dict[str, Any]:
    # what the endpoint reports may flicker (timeouts); the configured identity must not change
    return {k: v for k, v in ident.items() if k != "reported_models"}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
