"""`amc fetch textcraft`: checksum verification and placement, from local copies (no network)."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amc.cli import app
from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.fetch import (
    RECIPES_COUNT,
    fetch_textcraft,
    recipes_from_tarball,
    verify_recipes,
)


@pytest.fixture()
def local_copy(tmp_path: Path, recipes_dir: Path, splits_dir: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(recipes_dir, src / "recipes")
    shutil.copytree(splits_dir, src / "splits")
    for p in src.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)  # the shared copy is read-only
    return src


def test_verified_copy_is_placed_and_usable(local_copy: Path, tmp_path: Path) -> None:
    dest = fetch_textcraft(tmp_path / "dest", from_dir=local_copy)
    assert len(list((dest / "recipes").glob("*.json"))) == RECIPES_COUNT
    assert sorted(p.name for p in (dest / "splits").iterdir()) == [
        "textcraft_crafting_depths.csv", "textcraft_test_ids.csv", "textcraft_train_ids.csv"]
    s = TextCraftSuite(TextCraftOptions(recipe_source=str(dest / "recipes"), split="paper",
                                        splits_dir=dest / "splits", min_depth=3))
    assert len(s.task_ids("test")) == 27
    fetch_textcraft(dest, from_dir=local_copy)  # re-running replaces in place
    assert len(list((dest / "recipes").glob("*.json"))) == RECIPES_COUNT


@pytest.mark.parametrize("target", ["recipes/stick.json", "splits/textcraft_test_ids.csv"])
def test_tampered_files_are_rejected_and_nothing_is_placed(
    local_copy: Path, tmp_path: Path, target: str
) -> None:
    with (local_copy / target).open("a") as f:
        f.write("\n")
    dest = tmp_path / "dest"
    with pytest.raises(ValueError, match=r"verification|SHA-256"):
        fetch_textcraft(dest, from_dir=local_copy)
    assert not dest.exists()
    r = CliRunner().invoke(app, ["fetch", "textcraft", "--from-dir", str(local_copy),
                                 "--dest", str(dest)])
    assert r.exit_code == 2 and r.output.startswith("error:")


def test_recipes_are_extracted_from_a_source_tarball(recipes_dir: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        prefix = "AgentGym-pinned/agentenv-textcraft/agentenv_textcraft/recipes/"
        for p in sorted(recipes_dir.glob("*.json")):
            tar.add(p, arcname=prefix + p.name)
        tar.add(recipes_dir / "stick.json", arcname="AgentGym-pinned/other/stick.json")
    files = recipes_from_tarball(buf.getvalue())
    assert len(files) == RECIPES_COUNT
    verify_recipes(files)
    files.pop("stick.json")
    with pytest.raises(ValueError, match="859 files"):
        verify_recipes(files)


def test_cli_places_files(local_copy: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["fetch", "textcraft", "--from-dir", str(local_copy),
                                 "--dest", str(tmp_path / "d")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "d" / "splits" / "textcraft_train_ids.csv").is_file()
