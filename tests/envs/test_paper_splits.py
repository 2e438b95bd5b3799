"""The paper's task ids ship with the package, and no code path reads ../shared at run time."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from amc.envs.agentgym.client import AgentGymOptions, AgentGymSuite
from amc.envs.benchmarks import get_benchmark, paper_split
from amc.envs.sciworld.env import SciWorldOptions, SciWorldSuite
from amc.envs.textcraft.env import load_book
from amc.envs.textcraft.tasks import DEPTHS_FILE, TaskSet
from amc.envs.webshop.env import TEST_IDS, TRAIN_IDS

REPO = Path(__file__).resolve().parents[2]


def test_packaged_ids_equal_the_papers_files(shared_data: Path) -> None:
    d = shared_data / "splits"
    for split in ("train", "test"):
        assert paper_split("sciworld", split) == json.loads(
            (d / f"sciworld_{split}_idx.json").read_text())
        assert paper_split("textcraft", split) == [
            int(line) for line in (d / f"textcraft_{split}_ids.csv").read_text().split()]
        assert paper_split("webshop", split) == json.loads(
            (d / f"webshop_{split}_idx.json").read_text())
    assert list(TEST_IDS) == paper_split("webshop", "test")
    assert list(TRAIN_IDS) == paper_split("webshop", "train")


def test_packaged_splits_are_well_formed_and_bad_names_fail() -> None:
    for bench, sizes in {"sciworld": (200, 1121), "textcraft": (100, 374),
                         "webshop": (50, 1451)}.items():
        test, train = paper_split(bench, "test"), paper_split(bench, "train")
        assert (len(test), len(train)) == sizes and not set(test) & set(train)
        assert all(isinstance(i, int) and i >= 0 for i in test + train)
    with pytest.raises(ValueError, match="'train' and 'test'"):
        paper_split("sciworld", "valid")
    with pytest.raises(ValueError, match="no packaged paper split for 'alfworld'"):
        paper_split("alfworld", "test")


def test_each_benchmark_record_is_the_one_source_of_its_paper_split() -> None:
    for bench in ("sciworld", "textcraft", "webshop"):
        record = get_benchmark(bench)
        assert record.paper_split is not None
        assert paper_split(bench, "test") == record.paper_split("test")
    # the environments' own splits are the records' (no second copy of the ids)
    assert list(TEST_IDS) == get_benchmark("webshop").paper_split("test")


def test_textcraft_paper_split_takes_its_ids_from_the_packaged_split(tmp_path: Path) -> None:
    """Only the goal list (the depth file) comes from splits_dir: no id files are read."""
    book = load_book("minecraft-data")
    rows = book.goal_items()
    (tmp_path / DEPTHS_FILE).write_text("".join(f"{g}\t{d}\n" for g, d in rows))
    tasks = TaskSet(book, split="paper", splits_dir=tmp_path, min_depth=2, max_depth=3)
    for split in ("train", "test"):
        want = [str(i) for i in paper_split("textcraft", split)
                if 2 <= rows[i % len(rows)][1] <= 3]
        assert tasks.task_ids(split) == want and len(want) > 10


def test_sciworld_defaults_to_the_packaged_split_without_any_data(monkeypatch) -> None:
    monkeypatch.delenv("AMC_SPLITS_DIR", raising=False)
    suite = SciWorldSuite(SciWorldOptions())
    try:
        test = suite.task_ids("test")
        assert test[:3] == ["536", "537", "538"] and len(test) == 200
        assert suite.task_ids("train") == [str(i) for i in paper_split("sciworld", "train")]
    finally:
        suite.close()


@pytest.mark.parametrize("protocol", ["sciworld", "textcraft", "webshop"])
def test_agentgym_client_uses_the_papers_split_when_the_server_has_no_task_ids(protocol) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"detail": "Not Found"})  # an upstream server

    s = AgentGymSuite(AgentGymOptions(protocol=protocol))
    s.http = httpx.Client(base_url="http://test", transport=httpx.MockTransport(handler))
    assert s.task_ids("test") == [str(i) for i in paper_split(protocol, "test")]
    with pytest.raises(ValueError, match="no task ids for split 'dev'"):
        s.task_ids("dev")
    s.close()


# a run-time path to the reference folder: '../shared', 'shared/data', or the tests' variables
_SHARED_PATH = re.compile(r"\.\./shared|shared/data|[\"']shared[\"']|AMC_SHARED|AMC_SPLITS_DIR")


def test_no_code_reads_the_shared_reference_folder() -> None:
    offenders = [
        f"{p.relative_to(REPO)}:{n}"
        for folder in ("amc", "flows") if (REPO / folder).is_dir()
        for p in sorted((REPO / folder).rglob("*.py"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if _SHARED_PATH.search(line)
    ]
    assert offenders == []
