"""Value-model datasets: collected trajectories -> one row per visited state, split by task.

Input is JSON lines of the driver's per-task result records, each holding
``"trajectories": [{"steps": [Step.to_dict(), ...], "total_reward": ..., ...}, ...]`` (``"turns"``
is accepted for ``"steps"``). A trajectory needs its task id and initial observation: they are
read from the trajectory (``task_id``, ``observation0``) or from the record around it. Anything
else that yields histories can use :func:`history_from_dict` and :func:`build_dataset` directly.

Targets follow the paper's Eq. 7 (Monte-Carlo return-to-go of one rollout), with the reference
code's label bugs fixed (amc-method.md §9 item 11)::

    y_t = sum_{tau=t+1}^{T} gamma^(tau-t-1) r_tau      (r_tau = reward of step tau)

so the first future reward is undiscounted and a terminal (or last) state gets 0. All G rollouts
of a task are kept by default (an unbiased sample of the prior pi); ``keep="best"`` keeps only
the highest-reward rollout, as the paper did. Tasks, not rows, are split (seeded), so no task
appears in two splits. The saved directory holds the Hugging Face ``DatasetDict`` (Arrow), the
render options (``render.json``, re-used by the model at inference) and a card (``card.json``,
``README.md``: counts, target histogram, success rate, content hash).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from amc.config import Frozen
from amc.types import History, Step
from amc.value.render import Renderer, RenderOptions, model_budget

SPLITS = ("train", "validation", "test")


class DatasetOptions(Frozen):
    """How trajectories become value-regression rows."""

    gamma: float = Field(1.0, gt=0, le=1)
    """Discount of future rewards (paper: 1, no discount)."""
    keep: Literal["all", "best"] = "all"
    """Keep all G rollouts per task (unbiased) or only the best one (the paper)."""
    include_terminal: bool = True
    """Whether a finished trajectory's last state is a row (its target is 0)."""
    val_fraction: float = Field(0.2, ge=0, lt=1)
    """Fraction of tasks in the validation split."""
    test_fraction: float = Field(0.0, ge=0, lt=1)
    """Fraction of tasks in the test split."""
    seed: int = 0
    """Seed of the task split."""
    success_threshold: float = 1.0
    """A trajectory with total reward >= this counts as a success."""
    render: RenderOptions = RenderOptions()
    """The renderer settings (stored with the dataset and the model)."""
    tokenizer: str | None = "minilm"
    """Tokenizer counting the render budget ("minilm", an HF path, or None: no budget)."""
    model_max_length: int | None = Field(256, ge=16)
    """The value model's input length in tokens, special tokens included (the train stage's
    ``max_length``; default: the value model's default, ``ModelConfig.max_length``): unless
    ``render.max_tokens`` is set, renderings are fitted to it less the tokenizer's special
    tokens, and that budget is stored as the dataset's ``max_tokens`` (None: the tokenizer's
    own limit)."""


# ---------------------------------------------------------------- reading trajectories


def history_from_dict(d: Mapping[str, Any], task_id: str | None = None,
                      observation0: str | None = None, budget: int | None = None) -> History:
    """A :class:`History` from a dict ``{task_id, observation0, steps|turns: [Step dicts]}``.

    ``task_id``/``observation0`` arguments fill in keys the dict lacks (e.g. when they live in
    the surrounding per-task record). This is the one adapter to change if the driver's record
    layout changes.
    """
    tid = d.get("task_id", task_id)
    obs0 = d.get("observation0", d.get("initial_observation", observation0))
    if tid is None or obs0 is None:
        raise ValueError("trajectory lacks task_id or observation0 (and the record has none)")
    raw_steps = d.get("steps", d.get("turns"))
    if raw_steps is None:
        raise ValueError(f"trajectory of task {tid!r} has neither 'steps' nor 'turns'")
    b = d.get("budget", budget)
    return History(str(tid), str(obs0), tuple(Step.from_dict(s) for s in raw_steps),
                   budget=None if b is None else int(b))


def histories_from_record(record: Mapping[str, Any]) -> list[History]:
    """All trajectories of one per-task result record (or one bare trajectory dict)."""
    trajs = record.get("trajectories")
    if trajs is None:
        return [history_from_dict(record)]
    tid = record.get("task_id")
    obs0 = record.get("observation0", record.get("initial_observation"))
    return [history_from_dict(t, tid, obs0, record.get("budget")) for t in trajs]


def read_trajectories(paths: Sequence[str | Path]) -> list[History]:
    """Histories from JSON-lines files of result records (blank lines skipped). A task whose
    per-task record appears twice in a file is refused, naming ``file:line``: its rollouts
    would count twice (a bare trajectory per line may repeat a task)."""
    out: list[History] = []
    for p in map(Path, paths):
        if not p.is_file():
            raise FileNotFoundError(f"trajectory file not found: {p}")
        seen: dict[str, int] = {}
        for n, line in enumerate(p.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{p}:{n}: not JSON ({err.msg})") from None
            if isinstance(rec, dict) and "trajectories" in rec:
                tid = str(rec.get("task_id"))
                if tid in seen:
                    raise ValueError(f"{p}:{n}: task {tid!r} is recorded twice (line "
                                     f"{seen[tid]}); delete one of the two lines, or collect "
                                     "again")
                seen[tid] = n
            out.extend(histories_from_record(rec))
    if not out:
        raise ValueError("no trajectories found in " + ", ".join(map(str, paths)))
    return out


# ---------------------------------------------------------------- targets and rows


def returns_to_go(rewards: Sequence[float], gamma: float = 1.0) -> list[float]:
    """Targets for states s_0..s_T given the rewards r_1..r_T of the T steps.

    ``y_t = sum_{tau>t} gamma^(tau-t-1) r_tau``; ``y_T = 0``. Length T + 1.
    """
    out = [0.0] * (len(rewards) + 1)
    acc = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        acc = float(rewards[t]) + gamma * acc  # rewards[t] is r_{t+1}, the reward entering s_{t+1}
        out[t] = acc
    return out


def state_rows(history: History, options: DatasetOptions, renderer: Renderer,
               traj_index: int = 0) -> list[dict[str, Any]]:
    """One row per visited state of a complete trajectory."""
    rewards = [s.reward for s in history.steps]
    targets = returns_to_go(rewards, options.gamma)
    total = history.total_reward
    success = total >= options.success_threshold
    rows = []
    last = len(history.steps)
    for t in range(last + 1):
        terminal = t == last and history.done
        if terminal and not options.include_terminal:
            continue
        fitted = renderer.fit(history.prefix(t))
        rows.append({
            "task_id": history.task_id, "traj": traj_index, "step": t,
            "text": fitted.text, "target": float(targets[t]),
            "history_dropped": fitted.dropped_rounds > 0,
            "instruction_shortened": fitted.instruction_shortened,
            "over_budget": fitted.over_budget,
            "reward_so_far": float(sum(rewards[:t])), "total_reward": float(total),
            "success": bool(success), "terminal": bool(terminal),
        })
    return rows


def split_tasks(task_ids: Iterable[str], options: DatasetOptions) -> dict[str, list[str]]:
    """Seeded task-level split (sorted ids, one permutation); every task in exactly one split."""
    ids = sorted(set(task_ids))
    perm = np.random.default_rng(options.seed).permutation(len(ids))
    n = len(ids)
    n_val = round(n * options.val_fraction)
    n_test = round(n * options.test_fraction)
    if options.val_fraction > 0 and n >= 2:
        n_val = max(n_val, 1)
    if n_val + n_test >= n:
        raise ValueError(f"{n} tasks are too few for val={options.val_fraction}, "
                         f"test={options.test_fraction} (need at least one training task)")
    shuffled = [ids[i] for i in perm]
    return {
        "validation": sorted(shuffled[:n_val]),
        "test": sorted(shuffled[n_val:n_val + n_test]),
        "train": sorted(shuffled[n_val + n_test:]),
    }


def load_tokenizer(name: str) -> Any:
    """A Hugging Face tokenizer; ``"minilm"`` is the offline MiniLM-L6 shipped as a package."""
    from transformers import AutoTokenizer

    from amc.value.model import resolve_backbone

    return AutoTokenizer.from_pretrained(resolve_backbone(name))


def fitted_options(options: DatasetOptions, tokenizer: Any) -> DatasetOptions:
    """``options`` with the render budget made explicit: ``render.max_tokens`` if set, else
    ``model_max_length`` (or the tokenizer's limit) less the tokenizer's special tokens."""
    if options.render.max_tokens is not None:
        return options
    if options.model_max_length is not None:
        tokenizer.model_max_length = options.model_max_length
    budget = model_budget(tokenizer)
    if budget is None:
        return options
    render = options.render.model_copy(update={"max_tokens": budget})
    return options.model_copy(update={"render": render})


def build_rows(histories: Sequence[History], options: DatasetOptions,
               tokenizer: Any = None) -> dict[str, list[dict[str, Any]]]:
    """Rows per split from histories (grouped by task; ``keep`` applied per task)."""
    renderer = Renderer(options.render, tokenizer)
    by_task: dict[str, list[History]] = {}
    for h in histories:
        by_task.setdefault(h.task_id, []).append(h)
    splits = split_tasks(by_task, options)
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for split, tids in splits.items():
        for tid in tids:
            trajs = by_task[tid]
            if options.keep == "best":
                # Highest total reward; ties -> the first collected (deterministic).
                best = max(range(len(trajs)), key=lambda i: (trajs[i].total_reward, -i))
                chosen = [(best, trajs[best])]
            else:
                chosen = list(enumerate(trajs))
            for g, h in chosen:
                out[split].extend(state_rows(h, options, renderer, g))
    return out


def rows_hash(rows: dict[str, list[dict[str, Any]]]) -> str:
    """Content hash of a dataset: split, task, trajectory, step, text and target of every row."""
    h = hashlib.sha256()
    for split in sorted(rows):
        for r in rows[split]:
            key = [split, r["task_id"], r["traj"], r["step"], r["text"], round(r["target"], 8)]
            h.update(json.dumps(key).encode())
    return h.hexdigest()[:16]


def dataset_card(rows: dict[str, list[dict[str, Any]]], options: DatasetOptions,
                 bins: int = 10) -> dict[str, Any]:
    """Counts, target histogram and success rates per split (JSON-ready)."""
    card: dict[str, Any] = {"options": options.model_dump(mode="json"),
                            "content_hash": rows_hash(rows), "splits": {}}
    every = [r["target"] for rs in rows.values() for r in rs]
    lo, hi = (min(every), max(every)) if every else (0.0, 1.0)
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    for split, rs in rows.items():
        trajs = {(r["task_id"], r["traj"]): r["success"] for r in rs}
        tasks = {r["task_id"] for r in rs}
        hist, _ = np.histogram([r["target"] for r in rs], bins=edges)
        card["splits"][split] = {
            "rows": len(rs), "tasks": len(tasks), "trajectories": len(trajs),
            "success_rate": float(np.mean(list(trajs.values()))) if trajs else None,
            "target_mean": float(np.mean([r["target"] for r in rs])) if rs else None,
            **fit_shares(rs),
            "target_histogram": {"edges": [round(float(e), 4) for e in edges],
                                 "counts": hist.tolist()},
        }
    return card


def fit_shares(rows: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Shares of rows whose rendering lost old history, had its instruction shortened, or had
    still exceeded it with NOW alone over budget (None: no rows)."""
    keys = ("history_dropped", "instruction_shortened", "over_budget")
    return {f"share_{k}": (float(np.mean([bool(r.get(k)) for r in rows])) if rows else None)
            for k in keys}


def card_markdown(card: dict[str, Any]) -> str:
    """A human-readable dataset card."""
    lines = ["# Value dataset", "", f"Content hash: `{card['content_hash']}`", "",
             "| split | tasks | trajectories | rows | success rate | mean target "
             "| history dropped | instruction shortened |",
             "|---|---|---|---|---|---|---|---|"]

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    for split, s in card["splits"].items():
        lines.append(f"| {split} | {s['tasks']} | {s['trajectories']} | {s['rows']} "
                     f"| {fmt(s['success_rate'])} | {fmt(s['target_mean'])} "
                     f"| {fmt(s.get('share_history_dropped'))} "
                     f"| {fmt(s.get('share_instruction_shortened'))} |")
    edges = card["splits"]["train"]["target_histogram"]["edges"]
    lines += ["", "Target histogram (all splits):", "", "| bin | " + " | ".join(SPLITS) + " |",
              "|---|---|---|---|"]
    for i in range(len(edges) - 1):
        counts = [str(card["splits"][s]["target_histogram"]["counts"][i]) for s in SPLITS]
        lines.append(f"| [{edges[i]}, {edges[i + 1]}) | " + " | ".join(counts) + " |")
    lines += ["", "Options:", "", "```json", json.dumps(card["options"], indent=2), "```"]
    return "\n".join(lines) + "\n"


def build_dataset(histories: Sequence[History], out_dir: str | Path,
                  options: DatasetOptions = DatasetOptions()) -> dict[str, Any]:
    """Build, save (Arrow ``DatasetDict`` + ``render.json`` + card) and return the card."""
    from datasets import Dataset, DatasetDict, Features, Value

    if options.render.max_tokens is not None and options.tokenizer is None:
        raise ValueError("render.max_tokens needs a tokenizer (option tokenizer)")
    tok = None
    if options.tokenizer is not None:
        tok = load_tokenizer(options.tokenizer)
        options = fitted_options(options, tok)
    rows = build_rows(histories, options, tok)
    features = Features({
        "task_id": Value("string"), "traj": Value("int32"), "step": Value("int32"),
        "text": Value("string"), "target": Value("float32"), "reward_so_far": Value("float32"),
        "total_reward": Value("float32"), "success": Value("bool"), "terminal": Value("bool"),
    })
    # Empty splits are not saved (Arrow cannot reload a 0-shard split); the loader re-creates them.
    dsd = DatasetDict({
        s: Dataset.from_dict({k: [r[k] for r in rows[s]] for k in features}, features=features)
        for s in SPLITS if rows[s]})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dsd.save_to_disk(str(out / "data"))
    card = dataset_card(rows, options)
    (out / "render.json").write_text(options.render.model_dump_json(indent=2))
    (out / "card.json").write_text(json.dumps(card, indent=2))
    (out / "README.md").write_text(card_markdown(card))
    return card


def load_dataset_dir(path: str | Path) -> tuple[Any, RenderOptions, dict[str, Any]]:
    """(DatasetDict, render options, card) of a directory written by :func:`build_dataset`."""
    from datasets import Dataset, load_from_disk

    p = Path(path)
    if not (p / "card.json").is_file() or not (p / "data").is_dir():
        raise FileNotFoundError(f"not a value dataset directory (no card.json/data): {p}")
    render = RenderOptions.stored(json.loads((p / "render.json").read_text()))
    dsd = load_from_disk(str(p / "data"))
    features = next(iter(dsd.values())).features
    for s in SPLITS:
        if s not in dsd:
            dsd[s] = Dataset.from_dict({k: [] for k in features}, features=features)
    return dsd, render, json.loads((p / "card.json").read_text())
