"""Does today's renderer feed a kept value the inputs it was trained on?

A kept sweep value was trained with the renderer of its commit; a confirmatory run applies it
with today's :mod:`amc.value.render` (issue 49 changed how a rendering is fitted to the token
budget: over budget with no history left, the preamble goes before the instruction is cut).
This check renders the same histories with both -- the old module loaded from a checkout of
the value's commit -- under the value's stored options, and compares the model's input ids
after its own left truncation. Histories: ``--rollouts`` uniformly random valid-action
episodes (at most ``--steps`` actions) of each of the protocol's tasks (its declared split,
else all of its suite's; every prefix, the initial state included). WebShop's search box is
filled with the goal's own text, so results pages (its longest states) are rendered.

    python -m studies.confirm.render_parity /tmp/sw_old studies/confirm/textcraft.json \\
        sweeps/kept/value --out evidence/confirm/render-parity-textcraft.json
    python -m studies.confirm.render_parity /tmp/sw_sci studies/confirm/sciworld.json \\
        sweeps/kept/value-sciworld --tasks-file evidence/confirm/confirm-sciworld-1/tasks.json \\
        --out evidence/confirm/render-parity-sciworld.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
from pathlib import Path
from typing import Any


def old_render_module(checkout: Path) -> Any:
    spec = importlib.util.spec_from_file_location("old_render",
                                                  checkout / "amc/value/render.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv: list[str] | None = None) -> int:
    from amc.types import History, Step
    from amc.value.data import load_tokenizer
    from amc.value.render import Renderer, RenderOptions
    from studies.confirm.protocol import load
    from studies.confirm.run import make_suite

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="a checkout of the value's commit")
    ap.add_argument("protocol", type=Path)
    ap.add_argument("kept", type=Path, help="the kept value (its model/value_config.json)")
    ap.add_argument("--rollouts", type=int, default=8)
    ap.add_argument("--steps", type=int, default=12, help="at most this many actions")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--tasks-file", type=Path,
                    help="a run's drawn tasks (evidence/confirm/<id>/tasks.json) instead of the "
                         "declared split: protocols that draw games (SciWorld) have no split")
    a = ap.parse_args(argv)
    meta = json.loads((a.kept / "model/value_config.json").read_text())
    stored, max_length = meta["render"], int(meta["model"]["max_length"])
    old = old_render_module(a.old)
    tok = load_tokenizer("minilm")
    tok.truncation_side = "left"  # as the value model reads a rendering
    new_r = Renderer(RenderOptions.stored(stored), tok)
    old_r = old.Renderer(old.RenderOptions.model_validate(stored), tok)
    p = load(a.protocol)
    suite = make_suite(p)
    rng = random.Random(0)
    states, text_differs, by_step = 0, 0, {}
    goals = getattr(getattr(suite, "catalog", None), "goals", None)
    tids = ([str(t["task_id"]) for t in json.loads(a.tasks_file.read_text())["tasks"]]
            if a.tasks_file else suite.task_ids(p.tasks.get("split", "all")))
    for tid in tids:
        for _ in range(a.rollouts):
            env = suite.make()
            obs0, steps = env.reset(tid), []
            for t in range(a.steps):
                h = History(task_id=tid, observation0=obs0, steps=tuple(steps))
                x, y = old_r(h), new_r(h)
                states += 1
                if x != y:
                    text_differs += 1
                    ids = [tok(s, truncation=True, max_length=max_length)["input_ids"]
                           for s in (x, y)]
                    if ids[0] != ids[1]:
                        by_step[t] = by_step.get(t, 0) + 1
                act = rng.choice(env.valid_actions() or ["inventory"])
                if goals is not None and "<keywords>" in act:
                    act = act.replace("<keywords>", goals[int(tid)]["instruction_text"])
                st = env.step(act)
                steps.append(Step(raw_text=act, action=act, observation=st.observation,
                                  reward=st.reward, done=st.done))
                if st.done:
                    break
    rec = {"old": str(a.old), "protocol": p.id, "render": stored, "max_length": max_length,
           "states": states, "text_differs": text_differs,
           "model_input_differs": sum(by_step.values()),
           "model_input_differs_by_step": {str(k): v for k, v in sorted(by_step.items())}}
    print(json.dumps(rec))
    if a.out:
        a.out.write_text(json.dumps(rec, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
