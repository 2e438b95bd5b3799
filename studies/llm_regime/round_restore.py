"""The rounds' model registry rebuilt in a fresh sitting, by retraining, checked against the ledger.

What a round keeps in the repository (its ledger record, its rollouts, its results) does not
hold the value models' weights: those live in the MLflow store under ``runs/``, which a later
sitting lacks. Without them the next round would register its value as version 1 of an empty
store -- a ``models:/<name>/1`` that names another model than round 0's -- and the gate would
find no champion and promote without a test.

:func:`restore_registry` rebuilds the store instead: for every round whose trained version the
store lacks, in round order, it rebuilds that round's dataset from the kept rollouts (a
temporary copy of the ledger up to that round, so nothing recorded is rewritten), retrains
with the same params, and requires the same dataset content hash, the same version number and
the same validation metrics (to ``rounds.restore_tol``) as the ledger recorded -- a model that
does not reproduce is an error, never silently used. Then it points ``champion`` where the last
decision left it and ``challenger`` at the newest version.

Why a tolerance and a record: training on CPU is deterministic on one machine, not across
machines (their BLAS kernels round differently), so a later sitting's retrained version is a
near-copy, not the same weights. Every restore appends one line per round to
``<ledger_dir>/restores.jsonl`` (:data:`RESTORES`): the ledger's and the retrained metrics,
their largest difference, and how many results of that round's evaluations were already kept
(those ran with the earlier weights; every later one with the restored near-copy).
"""

from __future__ import annotations

import math
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from amc.pipeline import rounds
from amc.pipeline.params import PipelineParams, model_name
from amc.results import dumps

CHECKED = ("best_val_pearson", "best_val_auc", "best_val_mae")
"""Validation metrics a retrained version must reproduce."""

RESTORES = "restores.jsonl"
"""File (in ``rounds.ledger_dir``) where each restore is recorded, one line per round (read by
:mod:`studies.llm_regime.rounds_doc`)."""


def registered_versions(p: PipelineParams) -> set[str]:
    """Versions of the rounds' model in the store of ``p.mlflow_uri``."""
    import mlflow

    from amc.pipeline.lineage import setup

    setup(p.mlflow_uri, "amc-value")
    found = mlflow.MlflowClient().search_model_versions(f"name = '{model_name(p)}'")
    return {str(v.version) for v in found}


def missing_rounds(p: PipelineParams) -> list[dict[str, Any]]:
    """Ledger records whose trained version the store lacks, in round order."""
    have = registered_versions(p)
    return [rec for rec in rounds.list_rounds(p)
            if (tr := (rec.get("steps") or {}).get("train")) and str(tr["version"]) not in have]


def metric_differences(got: dict[str, Any], want: dict[str, Any]) -> dict[str, float]:
    """|retrained - recorded| per :data:`CHECKED` metric (0 where both are missing; inf where
    only one is)."""
    out = {}
    for k in CHECKED:
        x, y = (float("nan") if v is None else float(v) for v in (got.get(k), want.get(k)))
        out[k] = 0.0 if math.isnan(x) and math.isnan(y) else (
            math.inf if math.isnan(x) or math.isnan(y) else abs(x - y))
    return out


def check_reproduced(r: int, got: dict[str, Any], rec: dict[str, Any],
                     tol: float) -> dict[str, float]:
    """The metric differences of round ``r``'s retrained ``got`` from the ledger's train step
    ``rec``; raises when the version number differs or any difference exceeds ``tol``."""
    diff = metric_differences(got, rec["result"])
    bad = [k for k, d in diff.items() if not d <= tol]
    if str(got["version"]) != str(rec["version"]) or bad:
        shown = ", ".join(f"{k} by {diff[k]:.3g}" for k in bad)
        raise RuntimeError(f"round {r}: retrained version {got['version']} (ledger "
                           f"{rec['version']}) differs in {shown or 'its number'} (tolerance "
                           f"{tol:g}): not the model the round trained; refusing to go on with it")
    return diff


def retrain_round(p: PipelineParams, rec: dict[str, Any], tmp: Path,
                  tol: float) -> dict[str, Any]:
    """Rebuild round ``rec``'s dataset and value in ``tmp`` (checked); what was restored."""
    from amc.pipeline import dataset, train

    r = int(rec["round"])
    ledger = tmp / "ledger"
    ledger.mkdir(parents=True)
    for old in rounds.list_rounds(p):
        if int(old["round"]) <= r:  # a closed copy: the stages record nothing into it
            (ledger / f"round-{int(old['round']):04d}.json").write_text(
                dumps({**old, "status": "closed"}))
    q = p.model_copy(update={
        "rounds": p.rounds.model_copy(update={"ledger_dir": ledger}),
        "dataset": p.dataset.model_copy(update={"out_dir": tmp / "dataset"}),
        "train": p.train.model_copy(update={"out_dir": tmp / "value",
                                            "metrics_file": tmp / "train.json"})})
    want = rec["steps"]
    card = dataset.run(q)
    if card["content_hash"] != (want.get("dataset") or {}).get("content_hash"):
        raise RuntimeError(f"round {r}: the kept rollouts give dataset {card['content_hash']}, "
                           f"the ledger recorded {want.get('dataset', {}).get('content_hash')}")
    got = train.run(q)
    diff = check_reproduced(r, got, want["train"], tol)
    return {"round": r, "version": str(got["version"]), "tol": tol,
            "recorded": {k: want["train"]["result"].get(k) for k in CHECKED},
            "retrained": {k: got.get(k) for k in CHECKED},
            "max_difference": max(diff.values()), "exact": max(diff.values()) == 0.0}


def kept_counts(kept: Path | None, r: int) -> dict[str, int]:
    """Complete results per kept file of round ``r``'s evaluations under ``kept`` (the declared
    set's ``round-<r>/eval`` and, for the newest round, ``gate-eval``): what ran before."""
    import gzip

    if kept is None:
        return {}
    out = {}
    for d in (kept / f"round-{r:04d}" / "eval", kept / "gate-eval"):
        for f in sorted(d.glob("*.jsonl.gz")):
            with gzip.open(f, "rt") as fh:
                out[f"{d.relative_to(kept)}/{f.name}"] = sum(1 for ln in fh if ln.endswith("\n"))
    return out


def record_restore(p: PipelineParams, entry: dict[str, Any]) -> None:
    """Append ``entry`` (stamped with the time) to the ledger's :data:`RESTORES` file."""
    path = Path(p.rounds.ledger_dir) / RESTORES
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with path.open("a") as f:
        f.write(dumps({"restored_at": stamp, **entry}, sort_keys=True) + "\n")


def restore_registry(p: PipelineParams, *, kept: Path | None = None) -> list[int]:
    """Retrain every round the store lacks (checked to ``p.rounds.restore_tol``, each recorded
    with what of ``kept`` ran before); set the aliases; the rounds restored."""
    import mlflow

    todo = missing_rounds(p)
    if not todo:
        return []
    have = registered_versions(p)
    if have:
        raise RuntimeError(f"{p.mlflow_uri} holds versions {sorted(have)} of {model_name(p)} "
                           f"but not those of rounds {[int(t['round']) for t in todo]}: "
                           "restore into an empty store")
    done = []
    for rec in rounds.list_rounds(p):
        if (rec.get("steps") or {}).get("train"):
            with tempfile.TemporaryDirectory() as tmp:
                entry = retrain_round(p, rec, Path(tmp), p.rounds.restore_tol)
            record_restore(p, {**entry, "kept_before": kept_counts(kept, int(rec["round"]))})
            done.append(int(rec["round"]))
    client = mlflow.MlflowClient()
    champ = next((str(g["champion_after"]) for rec in reversed(rounds.list_rounds(p))
                  if (g := (rec.get("steps") or {}).get("promote")) and g.get("champion_after")),
                 None)
    if champ is not None:
        client.set_registered_model_alias(model_name(p), p.promote.alias, champ)
    return done
