from amc.envs.benchmarks import benchmark_names
from amc.envs.generic import GENERIC
from amc.priors.prompts import chat_messages, completion_prompt, get_prompts
from amc.types import History, Step

H = History(
    "t", "Crafting commands:\ncraft 4 oak planks using 1 oak log\n\nGoal: craft oak planks.",
    (Step("Thought: wood.\nAction: get 1 oak log", "get 1 oak log", "Got 1 oak log", 0, False),),
    valid_actions=("inventory", "get 1 oak log", "craft 4 oak planks using 1 oak log"),
)


def test_registry_has_the_three_benchmarks_and_a_fallback():
    assert {"textcraft", "sciworld", "webshop"} <= set(benchmark_names())
    assert len({get_prompts(b) for b in ("textcraft", "sciworld", "webshop")}) == 3
    assert get_prompts("unknown-env") is GENERIC.prompts
    assert "Reflection:" in get_prompts("sciworld").reflact_instruction
    for p in [GENERIC.prompts, *(get_prompts(b) for b in benchmark_names())]:
        assert "Thought:" in p.instruction and "Action:" in p.instruction


def test_chat_messages_alternate_and_end_with_the_observation():
    msgs = chat_messages(H, "textcraft")
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[2]["content"].endswith("Action: get 1 oak log")
    assert msgs[-1]["content"] == "Got 1 oak log"


def test_menu_lists_valid_actions_numbered():
    msgs = chat_messages(H, "textcraft", "menu")
    assert "1. inventory\n2. get 1 oak log\n3. craft 4 oak planks" in msgs[-1]["content"]
    prompt = completion_prompt(H, "textcraft", "menu")
    assert prompt.endswith("3. craft 4 oak planks using 1 oak log\nAction:")
    assert "Valid actions now:" in prompt.split("Now the real task.")[0]  # menu example


def test_completion_transcript_is_stable_and_windowed():
    prompt = completion_prompt(H, "textcraft")
    assert prompt.endswith("Action: get 1 oak log\nObservation: Got 1 oak log\nAction:")
    long = History("t", "start", tuple(
        Step(f"Action: a{i}", f"a{i}", f"o{i}", 0, False) for i in range(40)))
    windowed = completion_prompt(long, "synthetic", max_steps=5)
    assert "(35 earlier steps are not shown.)" in windowed and "Action: a34" not in windowed
    assert completion_prompt(long, "synthetic", max_steps=5) == windowed


def test_reflact_swaps_the_instruction():
    assert "Reflection:" in chat_messages(H, "sciworld", "reflact")[0]["content"]


def test_menu_style_without_valid_actions_is_plain_react():
    bare = History(H.task_id, H.observation0, H.steps)
    assert completion_prompt(bare, "textcraft", "menu") == completion_prompt(bare, "textcraft")
    assert chat_messages(bare, "textcraft", "menu") == chat_messages(bare, "textcraft")
