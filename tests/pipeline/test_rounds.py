"""Rounds (amc.pipeline.rounds): fresh seed blocks, an append-only store, the ledger, the window.

Real collections of the synthetic environment in a temp workdir (own MLflow store); the crash
test kills a real collect process mid-round and checks the earlier round is byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from amc.pipeline import artifacts, collect, dataset, rounds
from amc.pipeline.params import load_params
from amc.results import read_jsonl
from tests.pipeline.conftest import TOY_PARAMS

ROOT = Path(__file__).resolve().parents[2]


def write_params(**sections: dict) -> None:
    p = {**TOY_PARAMS, "rounds": {"enabled": True}}
    for k, v in sections.items():
        p[k] = {**p.get(k, {}), **v}
    Path("params.yaml").write_text(yaml.safe_dump(p))


def tree_digest(*paths: Path) -> dict[str, str]:
    """sha256 of every file under ``paths`` (relative path -> hash)."""
    out = {}
    for root in paths:
        files = [root] if root.is_file() else sorted(f for f in root.rglob("*") if f.is_file())
        for f in files:
            out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def test_seed_blocks_start_past_every_used_seed_and_are_never_reused(workdir: Path) -> None:
    write_params(collect={"seeds": [0, 1]}, rounds={"enabled": True, "seed_stride": 1000})
    p = load_params()
    r0 = rounds.open_round(p)  # the plain collect's seeds [0, 1] are taken: the next block
    assert (r0["round"], r0["seeds"], r0["status"]) == (0, [1000, 1001], "open")
    assert rounds.open_round(p)["round"] == 0  # the open round is resumed, not a new one
    rounds.close_round(p, 0)
    r1 = rounds.open_round(p)
    assert (r1["round"], r1["seeds"]) == (1, [2000, 2001])
    rounds.close_round(p, 1)
    # a smaller stride still starts past every used seed (2001): block 2500
    write_params(collect={"seeds": [0, 1]}, rounds={"enabled": True, "seed_stride": 500})
    assert rounds.open_round(load_params())["seeds"] == [2500, 2501]
    assert [r["round"] for r in rounds.list_rounds(p)] == [0, 1, 2]


def test_seeds_must_fit_in_the_stride_and_rounds_must_be_enabled(workdir: Path) -> None:
    write_params(collect={"seeds": [0, 1000]}, rounds={"enabled": True, "seed_stride": 1000})
    with pytest.raises(ValueError, match=r"collect.seeds \[1000\] must lie in \[0, "):
        rounds.open_round(load_params())
    write_params(rounds={"enabled": False})
    with pytest.raises(ValueError, match=r"rounds\.enabled is false"):
        rounds.open_round(load_params())


def test_closed_round_is_never_rewritten_and_prior_change_mid_round_refused(
        workdir: Path) -> None:
    write_params()
    p = load_params()
    rounds.open_round(p)
    rounds.record_step(p, 0, "collect", {"records": 3})
    write_params(prior={"name": "planner-mix", "options": {"q": 0.4}})
    with pytest.raises(ValueError, match="round 0 was opened with prior"):
        rounds.open_round(load_params())
    rounds.close_round(p, 0)
    before = rounds.ledger_path(p, 0).read_bytes()
    with pytest.raises(RuntimeError, match="round 0 is closed"):
        rounds.record_step(p, 0, "dataset", {})
    assert rounds.ledger_path(p, 0).read_bytes() == before


def test_two_rounds_collect_fresh_rollouts_and_the_window_picks_the_data(
        workdir: Path) -> None:
    write_params(rounds={"enabled": True, "window": 1})
    p = load_params()
    rows = []
    for r in (0, 1):
        res = collect.run(p)
        assert res.complete and res.out_dir == Path(f"data/trajectories/round-{r:04d}")
        assert [f.name for f in res.files] == [f"bon@4__seed{1000 * (r + 1)}.jsonl"]
        card = dataset.run(p)
        src = artifacts.source(p.dataset.out_dir)
        assert (src["round"], src["rounds"]) == (r, [r])  # window 1: this round only
        rows.append(card["splits"]["train"]["rows"])
        rec = rounds.load_round(p, r)
        assert rec["steps"]["collect"]["seeds"] == [1000 * (r + 1)]
        assert rec["steps"]["dataset"]["content_hash"] == card["content_hash"]
        rounds.close_round(p, r)
    a, b = (list(read_jsonl(f"data/trajectories/round-{r:04d}/bon@4__seed{1000 * (r + 1)}.jsonl"))
            for r in (0, 1))
    assert [x["task_id"] for x in a] != [] and {x["task_id"] for x in a} == {
        x["task_id"] for x in b}
    assert [x["seed"] for x in a + b] == [1000] * len(a) + [2000] * len(b)
    # fresh rollouts: the same tasks, other trajectories
    assert json.dumps([x["trajectories"] for x in a]) != json.dumps([x["trajectories"] for x in b])
    # window None: both rounds in the next dataset (the latest round's record is closed)
    write_params(rounds={"enabled": True, "window": None})
    card = dataset.run(load_params())
    assert artifacts.source(p.dataset.out_dir)["rounds"] == [0, 1]
    assert card["splits"]["train"]["rows"] + card["splits"]["validation"]["rows"] > max(rows)


@pytest.mark.slow
def test_a_round_killed_mid_collect_resumes_and_leaves_earlier_rounds_intact(
        workdir: Path) -> None:
    big = {"env": {"name": "synthetic", "options": {"n_train": 300, "depth": 5,
                                                     "p_terminal": 0.0}},
           "collect": {"max_tasks": 300, "rollouts": 8, "max_concurrent_tasks": 2}}
    write_params(**big)
    p = load_params()
    collect.run(p)  # round 0, complete
    dataset.run(p)
    rounds.close_round(p, 0)
    earlier = tree_digest(rounds.round_dir(p, 0), rounds.ledger_path(p, 0))
    out = rounds.round_dir(p, 1) / "bon@8__seed2000.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "amc.pipeline.collect"],
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 30:
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"collect ended before the kill: {proc.stderr.read()}"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert rounds.load_round(p, 1)["status"] == "open"
    assert "collect" not in rounds.load_round(p, 1)["steps"]
    res = collect.run(p)  # resumes round 1: same directory, same seeds
    assert res.out_dir == rounds.round_dir(p, 1) and res.complete
    ids = [r["task_id"] for r in read_jsonl(out)]
    assert len(ids) == len(set(ids)) == 300
    assert tree_digest(rounds.round_dir(p, 0), rounds.ledger_path(p, 0)) == earlier
    assert [r["round"] for r in rounds.list_rounds(p)] == [0, 1]


class _Models(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # http.server calls do_<METHOD>
        body = json.dumps({"data": [{"id": "toy-7b-2026-05"}, {"id": "toy-1b"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def models_endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


def test_prior_identity_names_the_prior_without_secrets(workdir: Path,
                                                         models_endpoint: str) -> None:
    write_params(env={"name": "textcraft", "options": {}},
                 prior={"name": "openai", "options": {
                     "model": "gpt-x", "base_url": models_endpoint, "api_key_env": "K"}})
    p = load_params()
    ident = rounds.prior_identity(p)
    assert ident["name"] == "openai" and ident["model"] == "gpt-x"
    assert ident["reported_models"] == ["toy-1b", "toy-7b-2026-05"]
    assert "api_key_env" not in ident["options"]
    assert ident["prompt_sha256"] == rounds.prompt_hash("textcraft")
    assert rounds.prompt_hash("textcraft") != rounds.prompt_hash("webshop")
    other = p.model_copy(update={"prior": p.prior.model_copy(update={
        "options": {**p.prior.options, "model": "gpt-y", "base_url": "http://127.0.0.1:9"}})})
    moved = rounds.prior_identity(other)
    assert moved["options_sha256"] != ident["options_sha256"]
    assert moved["reported_models"] is None  # nothing listens on port 9


def test_a_resumed_round_reuses_its_trained_version_for_the_same_dataset(
        workdir: Path) -> None:
    import mlflow

    from amc.pipeline import train
    from tests.pipeline.conftest import MODEL, register_version

    write_params()
    p = load_params()
    rounds.open_round(p)
    v1 = register_version(workdir, 1.0)  # what round 0 trained before it crashed
    v2 = register_version(workdir, 0.5)  # the alias moved on since (e.g. by hand)
    rounds.record_step(p, 0, "train", {"model": MODEL, "version": v1, "dataset_hash": "abc",
                                       "result": {"model": MODEL, "version": v1}})
    assert train.reuse(p, {"content_hash": "other"}) is None  # rebuilt data: train again
    client = mlflow.MlflowClient()
    assert str(client.get_model_version_by_alias(MODEL, "challenger").version) == v2
    assert train.reuse(p, {"content_hash": "abc"}) == {"model": MODEL, "version": v1}
    assert str(client.get_model_version_by_alias(MODEL, "challenger").version) == v1
    rounds.close_round(p, 0)
    assert train.reuse(p, {"content_hash": "abc"}) is None  # a closed round is never resumed


def test_the_gate_decision_keeps_its_p_and_mde_in_the_ledger(workdir: Path) -> None:
    write_params()
    p = load_params()
    rounds.open_round(p)
    d = {"promote": False, "tested": True, "delta": 0.02, "p_value": 0.31, "mde": 0.066,
         "n_tasks": 40, "decision_level": 0.025, "eval_status": "complete", "api_key": "x"}
    rec = rounds.finish_round(p, d)
    assert rec is not None and rec["status"] == "closed"
    gate = rec["steps"]["promote"]
    assert (gate["p_value"], gate["mde"], gate["n_tasks"], gate["decision_level"]) == \
        (0.31, 0.066, 40, 0.025)
    assert "api_key" not in gate


def test_rounds_after_a_plain_collect_never_rerun_its_seeds(workdir: Path) -> None:
    """Round 0 after the plain collect (seeds [0]) starts past every seed in the store: also
    past a seed only its files hold (5, from an earlier collect.seeds), never repeating one."""
    write_params(rounds={"enabled": False})
    plain = collect.run(load_params())
    assert [f.name for f in plain.files] == ["bon@4__seed0.jsonl"]
    extra = Path("data/trajectories/bon@4__seed5.jsonl")
    extra.write_text(Path("data/trajectories/bon@4__seed0.jsonl").read_text())
    write_params(collect={"seeds": [0, 3]}, rounds={"enabled": True, "seed_stride": 4})
    p = load_params()
    res = collect.run(p)
    seeds = sorted(int(x["seed"]) for f in res.files for x in read_jsonl(f))
    assert set(seeds) == {8, 11}  # base 8: the first multiple of 4 past 5 (a file's seed)
    rounds.close_round(p, 0)
    r1 = rounds.open_round(p)
    assert r1["seeds"] == [12, 15] and r1["seed_base"] == 12
    used = [int(s) for rec in rounds.list_rounds(p) for s in rec["seeds"]] + [0, 3, 5]
    assert len(used) == len(set(used))


def test_a_round_with_nothing_new_records_no_new_dataset_version(workdir: Path) -> None:
    """A resumed round whose collect found every task done builds the same rows: the dataset
    stage says unchanged and logs no second ``amc-dataset`` run (no new dataset version)."""
    import mlflow

    write_params()
    p = load_params()
    collect.run(p)
    first = dataset.run(p)
    again = collect.run(p)  # the round is still open: resumes, nothing to collect
    assert again.complete and again.records == 12
    second = dataset.run(p)
    assert second["unchanged"] and second["content_hash"] == first["content_hash"]
    assert "unchanged" not in first
    runs = mlflow.search_runs(experiment_names=["amc-dataset"], output_format="list")
    assert len(runs) == 1
    assert dataset.line(second).startswith(f"dataset {first['content_hash'][:8]} (unchanged, "
                                           "no new version): rows train ")


def test_a_model_is_of_a_round_only_while_the_round_is_open(workdir: Path) -> None:
    """Issue 63: `dvc exp run` after round 1 closed tagged its version amc.round=1 and named
    its run `train r1`, though round 1's ledger, final, lists only the earlier version."""
    from amc.pipeline.train import open_round_of

    write_params()
    p = load_params("params.yaml")
    r = int(rounds.open_round(p)["round"])
    assert open_round_of(p, {"round": r}) == r  # trained within the round
    rounds.close_round(p, r)
    assert open_round_of(p, {"round": r}) is None  # its data, after the ledger closed
    assert open_round_of(p, {}) is None
