"""The value protocol of the fine-tuned prior's regime: reserved tasks never trained on, the
LLM reader's features, heads ranked within (task, step) groups, the runner's refusals."""

import json
from pathlib import Path

import numpy as np
import pytest

from amc.types import History, Step
from studies.sft_prior.value import collect, figures, head, measure, protocol, reader, states

REPO = Path(__file__).resolve().parents[3]
HELD = json.loads((REPO / "studies/sft_prior/heldout.json").read_text())["tasks"]
T60 = set(json.loads((REPO / "studies/llm_regime/declared/llm-regime-testset60.json")
                     .read_text())["tasks"])


def proto() -> dict:
    return json.loads(protocol.PROTOCOL.read_text())

CHOSEN = {"checkpoint": 50, "depth": 2, "horizon": 8, "n": 4, "step": 2, "beta": 0.1}


def test_every_declared_training_plan_avoids_the_validation_test_reserve_and_testset60():
    reserved = set().union(*map(set, HELD.values())) | T60
    plans = proto()["training"]["plans"]
    assert set(plans) == {"2", "3"}
    for depth, by_h in plans.items():
        pool = set(protocol.pool(int(depth)))
        for p in by_h.values():
            assert p["tasks"] and not set(p["tasks"]) & reserved
            assert set(p["tasks"]) <= pool  # train split only: never a test-split task
            assert p["seeds"] == list(range(len(p["seeds"])))
    # the held-out set is the search's tasks: validation, never in a plan
    search = json.loads(protocol.SEARCH_PROTOCOL.read_text())["collection"]["tasks"]
    assert set(search["2"]) == set(HELD["validation-depth2"])


def test_a_plan_that_trains_on_validation_tasks_is_refused():
    plan = protocol.plan(CHOSEN, proto())
    leaky = {**plan, "tasks": plan["tasks"] + HELD["validation-depth2"][:1]}
    with pytest.raises(ValueError, match="validation-depth2"):
        collect.config(CHOSEN, leaky)
    with pytest.raises(ValueError, match="test-reserve-depth3"):
        protocol.check_training_tasks(plan["tasks"] + HELD["test-reserve-depth3"][:1], 2)
    collect.config(CHOSEN, plan)  # the declared plan itself passes


def tiny_lm():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", "get", "craft", "oak", "log", "plank", "stick", "1", "2", "3",
             "Action:", "Observation:"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]",
                                        unk_token="[UNK]")
    import torch

    torch.manual_seed(0)
    cfg = Gemma3TextConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32,
                           num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                           head_dim=8, max_position_embeddings=64, sliding_window=8)
    return Gemma3ForCausalLM(cfg).eval(), tokenizer


def test_hidden_features_give_one_deterministic_row_per_state():
    model, tok = tiny_lm()
    texts = ["Observation: get 1 oak log Action:", "Action: craft 2 plank",
             "Observation: get 1 oak log Action:", "get stick Observation: craft 3 oak plank 1"]
    a = reader.hidden_features(model, tok, texts, (1, 2), batch_size=2)
    b = reader.hidden_features(model, tok, texts, (1, 2), batch_size=2)
    assert set(a) == {"last1", "mean1", "last2", "mean2"}
    for k, x in a.items():
        assert x.shape == (len(texts), 16) and np.isfinite(x).all()
        assert np.array_equal(x, b[k])  # deterministic
        assert np.array_equal(x[0], x[2]) and not np.allclose(x[0], x[1])
    one = reader.hidden_features(model, tok, texts, (1, 2), batch_size=1)
    for k in a:  # right padding: a row does not depend on its batch
        assert np.allclose(a[k], one[k], atol=1e-5)
    with pytest.raises(ValueError):
        reader.hidden_features(model, tok, [], (1,))


def test_the_head_is_chosen_and_scored_by_the_within_task_step_auc_not_the_pooled_one():
    rng = np.random.default_rng(0)
    # validation: 4 easy tasks (3 of 4 siblings succeed), 4 hard (1 of 4), one step
    groups = [(f"t{i}", 1) for i in range(8) for _ in range(4)]
    easy = np.array([int(g[0][1:]) < 4 for g in groups])
    y = np.array([[1, 1, 1, 0] if e else [1, 0, 0, 0] for e in easy[::4]]).ravel().astype(bool)
    task_only = easy.astype(float)[:, None]  # constant within a group: within AUC 0.5
    within = (y + 5.0 * ~easy)[:, None]  # ranks siblings; hard tasks' failures outrank all
    pooled = pytest.importorskip("amc.value.metrics").roc_auc
    assert pooled(task_only[:, 0], y) > pooled(within[:, 0], y)  # a pooled rule picks "task"
    assert head.within_auc(within[:, 0], y, groups) == 1.0
    assert head.within_auc(task_only[:, 0], y, groups) == 0.5
    # a constructed table: figures read the within AUC
    t = states.Table([History("t", "o")] * len(y), groups, [(g[0], 0, 0, 1) for g in groups],
                     y, y.astype(float), np.zeros(len(y)), np.zeros(len(y), bool))
    assert figures.within_auc_of(within[:, 0] / 6, t) == 1.0
    f = figures.step_figures(task_only[:, 0] * 0.5, t, np.zeros(len(y), bool), (1,), 0.1, None)
    assert f["step1"]["auc_within"] == 0.5 and f["step1"]["spread"] == 0.0
    # training: both features carry the outcome, so each head's weight is positive
    ytr = rng.random(200) < 0.5
    x = ytr[:, None] + 0.3 * rng.standard_normal((200, 1))
    best, grid = head.select_head({"task": x, "within": x}, ytr,
                                  {"task": task_only, "within": within}, y, groups)
    assert best.feature == "within" and best.w[0] > 0
    assert {r["feature"] for r in grid} == {"task", "within"}


def test_the_rule_takes_the_largest_lower_bound_ties_to_the_cheaper_option():
    boot = {"a": {"auc": 0.70, "lo": 0.600}, "b": {"auc": 0.66, "lo": 0.595},
            "c": {"auc": 0.80, "lo": 0.500}, "d": {"auc": 0.9, "lo": float("nan")}}
    cost = {"a": 2.0, "b": 0.01, "c": 0.01, "d": 0.0}
    got = figures.choose(boot, cost, ["a", "b", "c", "d"])
    assert got["chosen"] == "b" and set(got["tied"]) == {"a", "b"} and got["above_chance"]
    assert figures.choose({"d": boot["d"]}, cost, ["d"])["chosen"] is None


def test_scored_states_are_live_at_step_t_and_succeed_within_h():
    def h(n, win_at=None):
        steps = [Step("a", "a", "o", 1.0 if k + 1 == win_at else 0.0, k + 1 == win_at)
                 for k in range(n)]
        return History("7", "o0", tuple(steps), budget=10)

    ro = {"7": [(0, 0, h(1, win_at=1)), (0, 1, h(10)), (0, 2, h(9, win_at=9)),
                (0, 3, h(4, win_at=4))]}
    t = states.table(ro, 8, 4, (2,))
    assert [r[2] for r in t.runs] == [0, 0, 0]  # index // N; the step-1 winner is gone
    assert t.success.tolist() == [False, False, True]  # success at 9 is past H = 8
    assert all(x.t == 2 and x.budget == 8 for x in t.histories)


def test_the_runner_refuses_without_a_chosen_regime_or_training_rollouts(tmp_path, capsys):
    room = tmp_path / "room.json"
    assert measure.main(["--room", str(room)]) == 2
    assert "regime search has not been analysed" in capsys.readouterr().err
    room.write_text(json.dumps({"chosen": None}))
    assert measure.main(["--room", str(room), "--out", str(tmp_path / "out")]) == 2
    assert "no chosen regime" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    room.write_text(json.dumps({"chosen": CHOSEN}))
    with pytest.raises(measure.Refused, match="training rollouts are missing"):
        measure.inputs(room, protocol.PROTOCOL, tmp_path / "train")


def test_padded_batches_pad_on_the_declared_side() -> None:
    ids = [[5, 6, 7], [8]]
    (rows, x, mask), = reader.padded_batches(ids, [0, 1], 8, pad=0, left=True)
    assert rows == [0, 1] and x.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    (_, x, mask), = reader.padded_batches(ids, [0, 1], 8, pad=0, left=False)
    assert x.tolist() == [[5, 6, 7], [8, 0, 0]] and mask.tolist() == [[1, 1, 1], [1, 0, 0]]
