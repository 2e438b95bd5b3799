"""Run the declared value protocol: every candidate's offline figures on the held-out set.

    python -m studies.sft_prior.value.measure [--candidates NAME ...] [--threads 2]

Refuses (exit status 2, the reason on stderr) while ``room.json`` has no chosen regime, while
``protocol.json`` is missing, or while the chosen regime's training rollouts
(:mod:`.collect`) are not all kept. Otherwise, following ``protocol.json``:

1. tables (:mod:`.states`): the training rollouts cut at H, split by task (20% validate); the
   held-out states at step t of the regime search's kept rollouts of the chosen cell;
2. the MiniLM options (:func:`studies.value_options.measure.fit_option`, seeds 0-2, each
   rendering embedded once through the project's cache) and the LLM candidates (the chosen
   checkpoint's model, :mod:`.reader` and :mod:`.head`); each candidate's T fitted on the
   validation states at step t;
3. the figures and the rule (:mod:`.figures`), written to ``evidence/sft-prior/value/
   result.json`` and the generated ``result.md`` (:mod:`.report`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from studies.sft_prior.regime_search.run import KEPT, step_dir
from studies.sft_prior.value import figures, states
from studies.sft_prior.value.protocol import (
    CANDIDATES,
    MINILM_SEEDS,
    OBJECTIVES,
    OUT,
    PROTOCOL,
    REFERENCE,
    RENDERINGS,
    REPO,
    ROOM,
    SEARCH,
    TRAIN,
    chosen_regime,
    plan,
)
from studies.sft_prior.value.reader import suite_for


class Refused(SystemExit):
    """The runner cannot run yet; the message says why."""


def inputs(room: Path = ROOM, protocol: Path = PROTOCOL, train_root: Path = TRAIN,
           search: Path = SEARCH) -> dict[str, Any]:
    """The chosen regime, its declared plan and rollouts, or :class:`Refused`."""
    from studies.sft_prior.value.collect import folder, missing

    try:
        c = chosen_regime(room)
    except SystemExit as e:
        raise Refused(str(e)) from None
    if not protocol.is_file():
        raise Refused(f"refused: {protocol.name} is not declared (python -m "
                      "studies.sft_prior.value.protocol)")
    proto = json.loads(protocol.read_text())
    p = plan(c, proto)
    gone = missing(c, p, train_root)
    if gone:
        raise Refused(f"refused: the training rollouts are missing: {len(gone)} of "
                      f"{len(p['tasks']) * len(p['seeds'])} planned (task, seed) runs are not "
                      f"kept under {folder(c, train_root)} (python -m "
                      "studies.sft_prior.value.collect)")
    held = search / step_dir(int(c["checkpoint"])) / f"depth{int(c['depth'])}"
    if not held.is_dir():
        raise Refused(f"refused: the chosen cell's held-out rollouts {held} are not kept")
    return {"chosen": c, "protocol": proto, "plan": p,
            "train": states.load(folder(c, train_root)), "held": states.load(held),
            "held_folder": held}


def tables(inp: dict[str, Any]) -> dict[str, states.Table]:
    """train (all prefixes) / validation (step t) / llm_train (steps t..t+2) / held (step t)."""
    from amc.value.data import DatasetOptions, split_tasks
    from studies.sft_prior.value.protocol import LLM_TRAIN_STEPS

    c = inp["chosen"]
    h, n, t = int(c["horizon"]), int(c["n"]), int(c["step"])
    sp = split_tasks(list(inp["train"]), DatasetOptions(seed=0))
    tr = {k: v for k, v in inp["train"].items() if k in set(sp["train"])}
    va = {k: v for k, v in inp["train"].items() if k in set(sp["validation"])}
    llm_steps = tuple(k for k in range(t, t + LLM_TRAIN_STEPS) if k < h)
    return {"train": states.table(tr, h, n, None), "validation_all": states.table(va, h, n, None),
            "validation": states.table(va, h, n, (t,)),
            "llm_train": states.table(tr, h, n, llm_steps),
            "held": states.table(inp["held"], h, n, (t,))}


def _temperature(v: np.ndarray, val: states.Table) -> float | None:
    from amc.value.temperature import fit_temperature

    try:
        return fit_temperature(v, val.success, val.groups).temperature
    except ValueError:  # no mixed validation group at step t
        return None


def minilm(tab: dict[str, states.Table], cache: Path, names: list[str]
           ) -> dict[str, dict[str, Any]]:
    """Each MiniLM option: held-out and validation values (seed 0), T, the seeds' AUCs."""
    from amc.value.train_head import head_predict
    from studies.value_options import states as vo
    from studies.value_options.measure import fit_option

    out: dict[str, dict[str, Any]] = {}
    _, tok = vo.encoder()
    for rendering in RENDERINGS:
        todo = [o for o in OBJECTIVES if f"minilm-{o}-{rendering}" in names]
        if not todo:
            continue
        render = vo.renderer(rendering, tok)
        sp = {"train": tab["train"].to_split(render),
              "validation": tab["validation_all"].to_split(render),
              "val_t": tab["validation"].to_split(render), "held": tab["held"].to_split(render)}
        vo.embed(sp, cache)
        for o in todo:
            res: dict[str, Any] = {"seeds": {}}
            for seed in MINILM_SEEDS:
                model, _, trained = fit_option(o, sp, seed)
                held = head_predict(model, sp["held"].features()) + tab["held"].reward_so_far
                val = (head_predict(model, sp["val_t"].features())
                       + tab["validation"].reward_so_far)
                res["seeds"][str(seed)] = figures.within_auc_of(held, tab["held"])
                if seed == MINILM_SEEDS[0]:
                    res.update({"held": held, "val": val, "training": trained})
            out[f"minilm-{o}-{rendering}"] = res
    return out


def llm(tab: dict[str, states.Table], c: dict[str, Any], names: list[str], threads: int
        ) -> dict[str, dict[str, Any]]:
    """The LLM candidates: hidden-state head (chosen on validation) and the yes/no values."""
    from studies.sft_prior.value import reader
    from studies.sft_prior.value.head import select_head

    todo = [n for n in names if n.startswith("llm-")]
    if not todo:
        return {}
    cfg = reader.ReaderConfig(adapter=str((KEPT / step_dir(int(c["checkpoint"])))
                                          .relative_to(REPO)),
                              depth=int(c["depth"]), threads=threads)
    prior = reader.load_prior(cfg)
    suite = reader.suite_for(cfg.depth)
    out: dict[str, dict[str, Any]] = {}
    if "llm-hidden" in todo:
        feats = {k: reader.hidden_features(prior.model, prior.tokenizer,
                                           reader.prompts(prior, tab[k].histories, suite),
                                           cfg.layers, cfg.batch_size, cfg.max_tokens)
                 for k in ("llm_train", "validation", "held")}
        head, grid = select_head(feats["llm_train"], tab["llm_train"].success,
                                 feats["validation"], tab["validation"].success,
                                 tab["validation"].groups)
        out["llm-hidden"] = {"held": head.predict(feats["held"][head.feature]),
                             "val": head.predict(feats["validation"][head.feature]),
                             "training": {"feature": head.feature, "l2": head.l2,
                                          "grid": grid, "states": len(tab["llm_train"])}}
    for name, render in (("llm-yesno", "value"), ("llm-yesno-compact", "compact")):
        if name in todo:
            held, st = reader.yesno_values(prior, tab["held"].histories, render)
            val, _ = reader.yesno_values(prior, tab["validation"].histories, render)
            out[name] = {"held": held, "val": val, "training": {"held_out_calls": st}}
    return out


def describe(t: states.Table) -> dict[str, float]:
    """Tasks, states, successful states and mixed (task, step) groups of a table."""
    seen: dict[tuple[str, int], set[bool]] = {}
    for g, y in zip(t.groups, t.success.tolist(), strict=True):
        seen.setdefault(g, set()).add(bool(y))
    return {"tasks": float(len({g[0] for g in t.groups})), "states": float(len(t)),
            "successes": float(t.success.sum()),
            "mixed_groups": float(sum(len(v) == 2 for v in seen.values()))}


def provenance() -> dict[str, Any]:
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True,
                              check=False).stdout.strip()

    return {"commit": git("rev-parse", "--short", "HEAD"),
            "load_average_1m": os.getloadavg()[0], "cpus": os.cpu_count()}


def run(inp: dict[str, Any], names: list[str], cache: Path, threads: int) -> dict[str, Any]:
    """The result document (numbers only; :mod:`.report` renders it)."""
    c, proto = inp["chosen"], inp["protocol"]
    t, beta = int(c["step"]), float(c["beta"])
    w, cpu = time.perf_counter(), time.process_time()
    tab = tables(inp)
    held = tab["held"]
    doomed = states.doomed(held, suite_for(int(c["depth"])))
    res = {**minilm(tab, cache, names), **llm(tab, c, names, threads)}
    for r in res.values():
        r["temperature"] = _temperature(r["val"], tab["validation"])
        r["val_auc_within"] = figures.within_auc_of(r["val"], tab["validation"])
        r["figures"] = figures.step_figures(r["held"], held, doomed, (t,), beta,
                                            r["temperature"])
    ref = REFERENCE if REFERENCE in res else next(iter(res))
    boot = figures.intervals({k: r["held"] for k, r in res.items()}, held, (t,), ref)
    rates = proto["cost"]["rates"]
    cost = {k: (rates["minilm"] if k.startswith("minilm") else rates[k])["cpu_s_per_state"]
            for k in res}
    choice = figures.choose(boot[f"step{t}"], cost, [k for k in CANDIDATES if k in res])
    if choice["chosen"] is not None:
        f = res[choice["chosen"]]["figures"][f"step{t}"]
        use_t = (res[choice["chosen"]]["temperature"] is not None
                 and f.get("log_loss_fitted", math.inf) < f["log_loss_beta"])
        choice["resample_at"] = ("fitted T" if use_t else "beta")
        choice["goal_met"] = boot[f"step{t}"][choice["chosen"]]["auc"] >= 0.65
    for r in res.values():
        del r["held"], r["val"]
    return {"provenance": provenance(), "protocol": str(PROTOCOL.relative_to(REPO)),
            "protocol_declared_utc": proto.get("declared_utc"), "regime": c,
            "plan": {k: inp["plan"][k] for k in ("n_tasks", "seeds", "rollouts")},
            "held_out_folder": str(inp["held_folder"].relative_to(REPO))
            if inp["held_folder"].is_relative_to(REPO) else str(inp["held_folder"]),
            "data": {k: describe(v) for k, v in tab.items()},
            "doomed_states": float(doomed.sum()), "reference": ref,
            "candidates": res, "bootstrap": boot, "cost_cpu_s_per_state": cost,
            "choice": choice, "wall_s": time.perf_counter() - w,
            "cpu_s": time.process_time() - cpu}


def main(argv: list[str] | None = None) -> int:
    from amc.results import dumps
    from studies.sft_prior.value.report import markdown

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", nargs="+", default=CANDIDATES, choices=CANDIDATES)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=REPO / ".cache/value-embeddings")
    ap.add_argument("--room", type=Path, default=ROOM)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    try:
        inp = inputs(a.room)
    except Refused as e:
        print(str(e), file=sys.stderr)
        return 2
    doc = run(inp, a.candidates, a.cache, a.threads)
    if a.candidates != CANDIDATES:
        doc["partial"] = "only " + ", ".join(a.candidates)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "result.json").write_text(dumps(doc, indent=1) + "\n")
    (a.out / "result.md").write_text(markdown(json.loads((a.out / "result.json").read_text())))
    print((a.out / "result.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
