"""Stage ``dataset``: the collected rollouts -> value-regression rows, split by task.

One row per visited state of every rollout in ``collect.out_dir`` (the files its
``manifest.json`` lists), with target = the realised future reward after that state
(:func:`amc.value.data.build_dataset`); tasks, not rows, are split into train/validation so no
task leaks across. The dataset directory also gets ``source.json``: the environment and prior
that produced the rollouts, so that training can refuse a dataset of another benchmark
(trajectories of one environment must never train the model registered for another) and, with
rounds, the round it belongs to and the rounds it was built from (``rounds.window``).

The dataset applies the ``collect`` section as it is now, whatever the collection's files hold
(:func:`current_histories`): a task a held-out set reserves since the collection
(``collect.exclude_tasks_files``) or one past a smaller ``collect.max_tasks`` is left out and
said so (the stage line, ``source.json``'s ``left_out``); a task the section selects that the
collection lacks is refused (rerun collect). A task recorded twice in a file is refused with
``file:line`` (:func:`amc.value.data.read_trajectories`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from amc.pipeline import rounds
from amc.pipeline.artifacts import MANIFEST, SOURCE, collect_tasks
from amc.pipeline.lineage import stage_run
from amc.pipeline.params import PipelineParams, stage_main


def collected_files(p: PipelineParams) -> tuple[dict[str, Any], list[Path]]:
    """The collect manifest and its trajectory files; error on a mismatch with ``p``.

    A manifest of another environment or prior (e.g. a synthetic run that wrote into the
    default folder) or an incomplete collection is refused. With rounds, the manifests of the
    window's rounds are combined (``round``: the newest, ``rounds``: all of them).
    """
    r = rounds.active_round(p)
    if r is None and rounds.enabled(p):
        raise FileNotFoundError(f"no round in {p.rounds.ledger_dir}: run the collect stage first")
    if r is None:
        return _manifest_files(p, p.collect.out_dir)
    merged: dict[str, Any] = {"records": 0, "round": r, "rounds": rounds.window(p, r)}
    files: list[Path] = []
    for x in merged["rounds"]:
        manifest, fs = _manifest_files(p, rounds.round_dir(p, x))
        merged.update({k: manifest[k] for k in ("env", "prior", "split")})
        merged["records"] += manifest["records"]
        files += fs
    return merged, files


def _manifest_files(p: PipelineParams, src: Path) -> tuple[dict[str, Any], list[Path]]:
    path = src / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run the collect stage first")
    manifest = json.loads(path.read_text())
    for key, want in (("env", p.env.name), ("prior", p.prior.name)):
        if manifest.get(key) != want:
            raise ValueError(f"{src} holds {key} {manifest.get(key)!r} rollouts but params say "
                             f"{key}.name={want!r}: rerun collect")
    if not manifest.get("complete"):
        raise ValueError(f"{path}: collection incomplete: rerun collect")
    return manifest, [src / name for name in manifest["files"]]


def current_histories(p: PipelineParams, files: list[Path], manifest: dict[str, Any]
                      ) -> tuple[list[Any], list[str]]:
    """(the trajectories of the tasks the collect section selects now, the collected tasks
    left out); a selected task the collection lacks is a ``ValueError`` naming the key that
    changed since the collection (its manifest's split and max_tasks, else the held-out sets)."""
    from amc.value.data import read_trajectories

    histories = read_trajectories([str(f) for f in files])
    want = collect_tasks(p)
    have = {h.task_id for h in histories}
    missing = [t for t in want if t not in have]
    if missing:
        then = manifest.get("config") or {}
        key = next((f"collect.{k}" for k in ("split", "max_tasks") if k in then
                    and then[k] != getattr(p.collect, k)), "collect.exclude_tasks_files")
        raise ValueError(f"{key}: changed since the collection in {p.collect.out_dir}, which "
                         f"lacks {len(missing)} task(s) the collect section selects now (e.g. "
                         f"{missing[0]!r}): rerun collect")
    keep = set(want)
    return [h for h in histories if h.task_id in keep], sorted(have - keep)


def options(p: PipelineParams) -> Any:
    """The :class:`~amc.value.data.DatasetOptions` of the ``dataset`` section."""
    from amc.value.data import DatasetOptions
    from amc.value.render import render_env_for

    d = p.dataset
    return DatasetOptions(gamma=d.gamma, keep=d.keep, seed=d.seed,
                          render={"env": render_env_for(p.env.name), "history_k": d.history_k},
                          model_max_length=p.train.max_length)  # fit the model's input


def run(p: PipelineParams) -> dict[str, Any]:
    """The stage: build the dataset, write ``source.json``, record ``amc-dataset``; the card."""
    import mlflow

    from amc.value.data import build_dataset

    started = time.time()
    manifest, files = collected_files(p)
    opts = options(p)  # before writing: a bad section must not leave a half-written dataset
    histories, left_out = current_histories(p, files, manifest)
    out = p.dataset.out_dir
    before = json.loads((out / SOURCE).read_text()) if (out / SOURCE).is_file() else {}
    card = build_dataset(histories, out, opts)
    source = {"env": manifest["env"], "prior": manifest["prior"], "split": manifest["split"],
              "records": manifest["records"], "content_hash": card["content_hash"],
              "round": manifest.get("round"), "rounds": manifest.get("rounds"),
              "left_out": left_out}
    (out / SOURCE).write_text(json.dumps(source, indent=2) + "\n")
    card = {**card, "left_out": left_out}
    if before == source:  # the same rows from the same rollouts: no new dataset version
        return {**card, "unchanged": True}
    r = source["round"]
    with stage_run("dataset", params={"env": {"name": p.env.name},
                                      "dataset": p.dataset.model_dump(mode="json"),
                                      "rounds": p.rounds.model_dump(mode="json")},
                   inputs=[str(p.collect.out_dir)], uri=p.mlflow_uri, round_=r,
                   started=started, detail=f"dataset {card['content_hash'][:8]}",
                   tags={"dataset_hash": card["content_hash"], **(
                       {} if r is None else {"amc.rounds": json.dumps(source["rounds"])})}):
        mlflow.log_metrics({f"{split}.{k}": float(s[k]) for split, s in card["splits"].items()
                            for k in ("rows", "tasks", "trajectories")})
        mlflow.log_dict(card, "card.json")
    if r is not None and rounds.current_round(p) is not None:
        rounds.record_step(p, r, "dataset", {
            "dir": str(out), "content_hash": card["content_hash"], "rounds": source["rounds"],
            "rows": {split: s["rows"] for split, s in card["splits"].items()}})
    return card


def line(card: dict[str, Any]) -> str:
    """The stage's one-line result on the console."""
    rows = ", ".join(f"{k} {s['rows']}" for k, s in card["splits"].items())
    what = "unchanged, no new version" if card.get("unchanged") else "new version"
    left = card.get("left_out") or []
    note = (f"; left out {len(left)} collected task(s) the collect section no longer selects "
            f"(collect.exclude_tasks_files, collect.max_tasks): {', '.join(left[:10])}"
            f"{' ...' if len(left) > 10 else ''}") if left else ""
    return f"dataset {card['content_hash'][:8]} ({what}): rows {rows}{note}"


if __name__ == "__main__":  # the DVC stage's cmd
    stage_main(lambda p: print(line(run(p)), flush=True))
