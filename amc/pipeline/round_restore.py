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
the same validation metrics (to ``tol``) as the ledger recorded -- a model that does not
reproduce is an error, never silently used. Then it points ``champion`` where the last decision
left it and ``challenger`` at the newest version.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

from amc.pipeline import rounds
from amc.pipeline.params import PipelineParams, model_name

CHECKED = ("best_val_pearson", "best_val_auc", "best_val_mae")
"""Validation metrics a retrained version must reproduce."""


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


def _same(a: Any, b: Any, tol: float) -> bool:
    x, y = float("nan") if a is None else float(a), float("nan") if b is None else float(b)
    return (math.isnan(x) and math.isnan(y)) or abs(x - y) <= tol


def retrain_round(p: PipelineParams, rec: dict[str, Any], tmp: Path, tol: float) -> str:
    """Rebuild round ``rec``'s dataset and value in ``tmp``; its version (checked)."""
    from amc.pipeline import dataset, train

    r = int(rec["round"])
    ledger = tmp / "ledger"
    ledger.mkdir(parents=True)
    for old in rounds.list_rounds(p):
        if int(old["round"]) <= r:  # a closed copy: the stages record nothing into it
            (ledger / f"round-{int(old['round']):04d}.json").write_text(
                json.dumps({**old, "status": "closed"}))
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
    tr = want["train"]
    bad = [k for k in CHECKED if not _same(got.get(k), tr["result"].get(k), tol)]
    if str(got["version"]) != str(tr["version"]) or bad:
        raise RuntimeError(f"round {r}: retrained version {got['version']} (ledger "
                           f"{tr['version']}) differs in {bad or 'its number'}: not the model "
                           "the round trained; refusing to go on with it")
    return str(got["version"])


def restore_registry(p: PipelineParams, *, tol: float = 1e-6) -> list[int]:
    """Retrain every round the store lacks (checked); set the aliases; the rounds restored."""
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
                retrain_round(p, rec, Path(tmp), tol)
            done.append(int(rec["round"]))
    client = mlflow.MlflowClient()
    champ = next((str(g["champion_after"]) for rec in reversed(rounds.list_rounds(p))
                  if (g := (rec.get("steps") or {}).get("promote")) and g.get("champion_after")),
                 None)
    if champ is not None:
        client.set_registered_model_alias(model_name(p), p.promote.alias, champ)
    return done
