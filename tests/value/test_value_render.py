"""The one renderer: per-env instructions, K-window, old history dropped first, NOW kept whole."""

from __future__ import annotations

from pathlib import Path

from amc.types import History, Step
from amc.value.data import DatasetOptions, build_rows
from amc.value.model import ModelConfig, load_tokenizer_for
from amc.value.render import Renderer, RenderOptions, extract_instruction, render

REPO = Path(__file__).resolve().parents[2]
TC_OBS0 = "Crafting commands:\ncraft 4 planks using 1 oak log\n\nGoal: craft wooden pickaxe."


def hist(n: int, obs: str = "obs", obs0: str = TC_OBS0) -> History:
    steps = tuple(Step(f"Action: act {i}", f"act {i}", f"{obs} {i}", 0.0, False) for i in range(n))
    return History("t1", obs0, steps)


def test_instruction_extraction_per_env() -> None:
    assert extract_instruction(TC_OBS0, "textcraft") == "craft wooden pickaxe."
    sw = "Task Description:\nYour task is to boil water.\nFirst, focus on the stove.\n"
    assert extract_instruction(sw, "sciworld") == "Your task is to boil water."
    assert extract_instruction("Your task is to melt ice.\nThis room is a kitchen.", "sciworld") \
        == "Your task is to melt ice."
    ws = "WebShop [SEP] Instruction: [SEP] i need a red shirt under $20 [SEP] Search"
    assert extract_instruction(ws, "webshop") == "i need a red shirt under $20"
    assert extract_instruction("You are at node /.", "generic") == "You are at node /."
    assert extract_instruction("Hello\nTask: find the key\nmore", "generic") == "find the key"


def test_k_window_keeps_most_recent_pairs() -> None:
    text = render(hist(5), RenderOptions(env="textcraft", history_k=2))
    assert "(3 earlier rounds omitted)" in text
    assert "Round 4 - ACTION:\nact 3" in text and "Round 5 - ACTION:\nact 4" in text
    assert "Round 3" not in text
    # The state before action i is the previous observation; the first is the commands block.
    full = render(hist(2), RenderOptions(env="textcraft", history_k=5, show_summary=False))
    assert "Round 1 - STATE:\nCrafting commands:" in full and "Goal:" not in full
    assert full.endswith("=== NOW ===\n[STATE] obs 1")
    assert "(none)" in render(hist(0), RenderOptions(env="textcraft"))


def test_budget_drops_oldest_history_first_and_never_cuts_now() -> None:
    tok = load_tokenizer_for(ModelConfig())
    opts = RenderOptions(env="textcraft", history_k=20, max_tokens=120, preamble="Value?")
    r = Renderer(opts, tok)
    h = hist(12, obs="the room has a chest and a table and a lamp")
    text = r(h)
    assert r.count_tokens(text) <= 120
    assert "Round 12 - ACTION:\nact 11" in text  # newest kept
    assert "Round 1 -" not in text and "earlier rounds omitted" in text  # oldest dropped
    # A current state longer than the whole budget is still kept whole (NOW is never cut).
    long_now = " ".join(f"item{i}" for i in range(200))
    h2 = h.extend(Step("x", "look", long_now, 0.0, False))
    text2 = r(h2)
    assert text2.endswith("[STATE] " + long_now)
    assert "Round" not in text2


def test_dataset_text_equals_inference_text() -> None:
    tok = load_tokenizer_for(ModelConfig())
    opts = DatasetOptions(render=RenderOptions(env="textcraft", history_k=3, max_tokens=64),
                          val_fraction=0.0)
    h = hist(6)
    rows = build_rows([h], opts, tok)["train"]
    r = Renderer(opts.render, tok)  # what LearnedValue builds from the model's stored options
    for row in rows:
        prefix = History(h.task_id, h.observation0, h.steps[: row["step"]])
        assert row["text"] == r(prefix)
    # valid_actions annotations (added by the driver at inference) do not change the text
    assert r(h.with_valid_actions(["a", "b"])) == r(h)


def test_steps_left_shown_only_when_asked_and_known() -> None:
    h = History("t1", TC_OBS0, hist(3).steps, budget=5)
    shown = render(h, RenderOptions(env="textcraft", show_budget=True))
    assert shown.endswith("=== NOW ===\n[STEPS LEFT] 2 of 5\n[SUMMARY] inventory: empty | goal "
                          "wooden pickaxe: no listed recipe\n[STATE] obs 2")
    # The same state with fewer steps left renders differently (the value can tell them apart).
    assert render(History("t1", TC_OBS0, h.steps, budget=4),
                  RenderOptions(env="textcraft", show_budget=True)) != shown
    assert "[STEPS LEFT]" not in render(h, RenderOptions(env="textcraft"))
    assert "[STEPS LEFT]" not in render(hist(3), RenderOptions(env="textcraft", show_budget=True))
    # Past the budget (a forced final action) the count stops at 0; prefixes keep the budget.
    over = History("t1", TC_OBS0, hist(7).steps, budget=5)
    assert "[STEPS LEFT] 0 of 5" in render(over, RenderOptions(env="textcraft", show_budget=True))
    assert h.prefix(1).budget == 5 and h.prefix(1).steps_left == 4


def test_steps_left_survive_the_token_budget() -> None:
    tok = load_tokenizer_for(ModelConfig())
    opts = RenderOptions(env="textcraft", history_k=20, max_tokens=80, show_budget=True,
                         preamble="Value?")
    r = Renderer(opts, tok)
    h = History("t1", TC_OBS0, hist(12, obs="a chest and a table and a lamp").steps, budget=14)
    text = r(h)
    assert r.count_tokens(text) <= 80 and "[STEPS LEFT] 2 of 14\n[SUMMARY]" in text


def longest_kept_histories(k: int = 3) -> list[History]:
    """The longest (fully rolled-out) histories of the kept embedded-LLM rollouts."""
    from amc.value.data import read_trajectories

    path = REPO / "evidence/llm-regime/trajectories/bon@15__seed0.jsonl"
    hs = read_trajectories([path])
    return sorted(hs, key=lambda h: -len(render(h, RenderOptions(env="textcraft"))))[:k]


def test_a_long_real_state_fits_128_tokens_with_goal_and_now_whole() -> None:
    """The model's own input (128 tokens, special tokens counted) holds the goal and NOW: the
    renderer drops the oldest history first (issue 49: the goal was lost in half the states)."""
    from amc.value.render import model_budget

    tok = load_tokenizer_for(ModelConfig(max_length=128))
    r = Renderer(RenderOptions(env="textcraft"), tok)
    assert r.budget == 128 - tok.num_special_tokens_to_add(pair=False) == 126
    for h in longest_kept_histories():
        full = render(h, RenderOptions(env="textcraft"))
        assert r.count_tokens(full) > 128  # it had to be cut
        fitted = r.fit(h)
        ids = tok(fitted.text, truncation=True)["input_ids"]
        assert len(tok(fitted.text)["input_ids"]) <= 128 == model_budget(tok) + 2
        kept = tok.decode(ids, skip_special_tokens=True)  # what the model actually reads
        goal = h.observation0.split("Goal:")[1].strip().splitlines()[0]  # "craft X."
        assert goal.lower() in kept.lower().split("= = = history")[0]
        now = fitted.text.split("=== NOW ===\n")[1]
        assert full.endswith(now) and now.startswith("[SUMMARY] inventory:")
        assert fitted.dropped_rounds > 0 and not fitted.instruction_shortened


def test_instruction_shortened_only_when_now_leaves_no_room() -> None:
    tok = load_tokenizer_for(ModelConfig())
    h = hist(2, obs="a chest and a table and a lamp " * 3)
    fitted = Renderer(RenderOptions(env="textcraft", max_tokens=70), tok).fit(h)
    assert fitted.preamble_dropped and fitted.instruction_shortened
    assert "..." in fitted.text and fitted.text.endswith("[STATE] " + h.observation.strip())
    huge = hist(1, obs="lamp " * 200)
    over = Renderer(RenderOptions(env="textcraft", max_tokens=40), tok).fit(huge)
    assert over.over_budget and over.text.endswith("lamp  0")  # NOW whole, though over


def test_a_default_dataset_fits_the_default_model(tmp_path: Path) -> None:
    """`amc dataset` then `amc train` with their defaults agree on the input length; a smaller
    model is refused with the fix in the message."""
    import pytest

    from amc.value.data import build_dataset, load_dataset_dir
    from amc.value.train_run import check_budget

    hs = [History(f"t{i}", TC_OBS0, hist(3).steps) for i in range(8)]
    build_dataset(hs, tmp_path / "ds", DatasetOptions(render=RenderOptions(env="textcraft")))
    _, render, _ = load_dataset_dir(tmp_path / "ds")
    assert render.max_tokens == ModelConfig().max_length - 2
    check_budget(render, ModelConfig().max_length)
    with pytest.raises(ValueError, match="model_max_length=48"):
        check_budget(render, 48)
