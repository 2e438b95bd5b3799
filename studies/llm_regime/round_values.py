"""Each round's value scored on one fixed held-out set of prior states.

A round's training record holds the value's quality on *its own* validation split, and that
split grows and changes with the dataset, so those numbers do not compare across rounds. This
module scores every round's value on the same states: the prior's rollouts of the declared test
set's tasks (the kept Best-of-N runs, e.g. ``bon@4`` over 60 tasks x 3 seeds x 4 rollouts),
which no round collects or trains on. Each prefix of each rollout is one state; its label is
whether the rollout succeeded (total reward >= ``smc.success_threshold``), its target the
reward still to come.

Measures (:func:`amc.value.metrics.value_metrics`): the plain ROC AUC of the implied success
score, Pearson and MAE against the target, and ``auc_within``: the AUC over pairs of states of
the same task at the same step only -- the comparison resampling makes -- in total and at each
resampling step (``smc.resample_steps``), where the value steers.

``python -m studies.llm_regime.round_values ROUNDS_PARAMS EVAL_DIR OUT [--spec bon@4]`` scores every
round whose ledger has a trained version and is not yet in ``OUT`` (resumable, written after
each round); the rounds' MLflow store must hold those versions.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from amc.pipeline import rounds
from amc.pipeline.calibration import model_scores
from amc.pipeline.params import PipelineParams, load_params
from amc.results import write_json_atomic
from amc.smc.records import TaskResult
from amc.types import History
from amc.value.metrics import auc_within_by_step, finite, value_metrics


@dataclass(frozen=True)
class States:
    """Prefix states of held-out rollouts, one entry per state (all lists of equal length)."""

    histories: list[History]
    """The prefix the value scores (task, first observation, steps so far)."""
    reward_so_far: np.ndarray
    """Reward collected before the state (float, shape (n,))."""
    target: np.ndarray
    """Reward still to come after it: what the value predicts (float, shape (n,))."""
    success: np.ndarray
    """Whether the rollout succeeded (bool, shape (n,))."""
    groups: list[tuple[str, int]]
    """(task, steps taken): the states one resampling step compares."""
    rollouts: int
    """How many rollouts the states come from."""


def load_results(folder: Path, spec: str) -> list[TaskResult]:
    """The kept ``<spec>__seed<k>.jsonl[.gz]`` records of ``folder`` (last per (task, seed))."""
    by: dict[tuple[str, int], TaskResult] = {}
    name = re.compile(re.escape(spec) + r"__seed\d+\.jsonl(\.gz)?")  # not .failures.jsonl
    files = sorted(f for f in folder.glob(f"{spec}__seed*") if name.fullmatch(f.name))
    if not files:
        raise FileNotFoundError(f"{folder}: no {spec}__seed<k>.jsonl[.gz] results")
    for f in files:
        text = gzip.decompress(f.read_bytes()).decode() if f.suffix == ".gz" else f.read_text()
        for line in text.splitlines():
            if line.strip():
                r = TaskResult.from_dict(json.loads(line))
                by[(str(r.task_id), int(r.seed))] = r
    return [by[k] for k in sorted(by)]


def held_out_states(results: Sequence[TaskResult], threshold: float) -> States:
    """Every prefix (0 .. T-1 steps) of every trajectory of ``results``."""
    hs: list[History] = []
    so_far, target, success, groups = [], [], [], []
    n = 0
    for r in results:
        for tr in r.trajectories:
            rewards = [float(s.reward) for s in tr.steps]
            won = sum(rewards) >= threshold
            n += 1
            for k in range(len(tr.steps)):
                hs.append(History(r.task_id, r.observation0, tr.steps[:k], budget=r.budget))
                so_far.append(sum(rewards[:k]))
                target.append(sum(rewards[k:]))
                success.append(won)
                groups.append((str(r.task_id), k))
    return States(hs, np.array(so_far, float), np.array(target, float),
                  np.array(success, bool), groups, n)


def states_digest(s: States) -> str:
    """A short hash of what is scored (tasks, steps, labels), so a changed set is not mixed in."""
    h = hashlib.sha256()
    for g, y, hist in zip(s.groups, s.success, s.histories, strict=True):
        h.update(f"{g[0]}|{g[1]}|{int(y)}|{[st.action for st in hist.steps]}\n".encode())
    return h.hexdigest()[:16]


def quality(scores: Sequence[float], s: States, resample_steps: Sequence[int]
            ) -> dict[str, float]:
    """The measures of one value's scores of ``s`` (finite ones only)."""
    pred = np.asarray(scores, float)
    out = finite(value_metrics(pred, s.target, s.reward_so_far, s.success, s.groups))
    by_step = auc_within_by_step(pred, s.reward_so_far, s.success, s.groups)
    out.update({f"auc_within_step{t}": by_step[str(t)] for t in resample_steps
                if str(t) in by_step})
    return out


def trained_rounds(p: PipelineParams) -> list[tuple[int, str]]:
    """(round, ``models:/name/version``) of every round whose ledger records a training."""
    out = []
    for rec in rounds.list_rounds(p):
        tr = (rec.get("steps") or {}).get("train") or {}
        if tr.get("version") is not None:
            out.append((int(rec["round"]), f"models:/{tr['model']}/{tr['version']}"))
    return out


def score_rounds(p: PipelineParams, eval_dir: Path, out: Path, spec: str = "bon@4"
                 ) -> dict[str, Any]:
    """Score each trained round's value on the held-out states into ``out`` (resumable)."""
    s = held_out_states(load_results(eval_dir, spec), float(p.smc.success_threshold))
    digest = states_digest(s)
    doc: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}
    if doc and doc.get("states_digest") != digest:
        raise ValueError(f"{out} scored other states ({doc.get('states_digest')} != {digest}); "
                         "move it away to rescore")
    doc.update({"source": f"{eval_dir}/{spec}__seed*", "states_digest": digest,
                "states": len(s.histories), "rollouts": s.rollouts,
                "tasks": len({g[0] for g in s.groups}),
                "success_rate": float(np.mean(s.success)) if len(s.success) else None,
                "resample_steps": list(p.smc.resample_steps or [])})
    done = {int(x["round"]): x for x in doc.get("rounds", [])}
    for r, uri in trained_rounds(p):
        if r in done and done[r].get("value") == uri:
            continue
        scores = model_scores(p, uri, s.histories)
        done[r] = {"round": r, "value": uri,
                   **quality(scores, s, doc["resample_steps"])}
        doc["rounds"] = [done[k] for k in sorted(done)]
        write_json_atomic(out, doc)
        print(f"round {r} ({uri}): " + json.dumps(done[r]), flush=True)
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.llm_regime.round_values")
    ap.add_argument("rounds", type=Path, help="the rounds' params file")
    ap.add_argument("eval_dir", type=Path, help="the declared set's kept results folder")
    ap.add_argument("out", type=Path, help="the JSON file to write (resumed if present)")
    ap.add_argument("--spec", default="bon@4", help="which kept prior runs (default bon@4)")
    a = ap.parse_args(argv)
    score_rounds(load_params(a.rounds), a.eval_dir, a.out, a.spec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
