"""Catalog files: goal building on the real attribute file, checksums, fetch and its CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import httpx
import pytest
import typer
from typer.testing import CliRunner

from amc.cli.fetch import fetch_webshop_cmd
from amc.envs.webshop.catalog import (
    ATTRIBUTES_FILE,
    HUMAN_FILE,
    PRODUCTS_FILE,
    Catalog,
    normalize_product,
)
from amc.envs.webshop.data import (
    CATALOG_PINS,
    ChecksumError,
    FilePin,
    fetch_webshop,
    git_blob_sha1,
    read_checksums,
    sha256_file,
)


@pytest.fixture(scope="module")
def real_attrs(shared_data: Path) -> Path:
    """WebShop's real attribute file in the reference data (skip where it is absent)."""
    path = shared_data / "webshop" / ATTRIBUTES_FILE
    if not path.is_file():
        pytest.skip(f"{path} absent")
    return path


def test_pins_match_the_shared_attribute_file(real_attrs: Path) -> None:
    pin = CATALOG_PINS[ATTRIBUTES_FILE]
    assert git_blob_sha1(real_attrs) == pin.git_blob_sha1
    assert sha256_file(real_attrs) == pin.sha256


def _generated_product(asin: str, i: int) -> dict:
    """A project-made product record for a real ASIN: 0, 1 or 2 option groups by index."""
    groups = {"Color": ["Red", "Blue/Green"], "Size": ["S", "M", "L"]}
    chosen = dict(list(groups.items())[: i % 3])
    return {
        "asin": asin, "name": f"Generated product {i}", "full_description": "",
        "small_description": "one line", "pricing": f"${5 + i % 200}.50",
        "customization_options": {k: [{"value": v} for v in vs] for k, vs in chosen.items()},
        "category": "c", "query": "Q ", "product_category": "A › B",
    }


def test_synthetic_goals_build_from_the_real_attribute_file(real_attrs: Path) -> None:
    annotations = json.loads(real_attrs.read_text())
    products = [
        normalize_product(_generated_product(asin, i), annotations[asin])
        for i, asin in enumerate(annotations)
    ]
    with_ins = [p for p in products if p["instruction_text"] is not None]
    assert len(products) == 1000 and len(with_ins) == 415
    catalog = Catalog(products)
    goals = catalog.goals
    assert len(goals) == sum(math.prod(len(v) for v in p["options"].values()) for p in with_ins)
    by_asin = {p["asin"]: p for p in with_ins}
    assert {g["asin"] for g in goals} == set(by_asin)
    for g in goals:
        p = by_asin[g["asin"]]
        assert g["instruction_text"].startswith(p["instruction_text"])
        assert g["attributes"] == p["instruction_attributes"] and g["attributes"]
        assert set(g["goal_options"]) == set(p["options"])
        for name, value in g["goal_options"].items():
            assert f"{name}: {value}" in g["instruction_text"]
        assert catalog.prices[g["asin"]] < g["price_upper"]
        assert g["instruction_text"].endswith(f"price lower than {g['price_upper']:.2f} dollars")
    # option values are normalised like the benchmark's ("/" -> " | ", lower case)
    assert any(g["goal_options"].get("color") == "blue | green" for g in goals)
    # the goal order is the seeded shuffle: same seed, same tasks; another seed, others
    assert [g["instruction_text"] for g in Catalog(products).goals] == [
        g["instruction_text"] for g in goals
    ]
    assert Catalog(products, seed=1).goals != goals


def _pins_for(directory: Path) -> dict[str, FilePin]:
    return {
        f: FilePin(git_blob_sha1(directory / f), sha256_file(directory / f))
        for f in (PRODUCTS_FILE, ATTRIBUTES_FILE, HUMAN_FILE)
    }


def _serving(directory: Path, requests: list[str], tamper: str | None = None) -> httpx.Client:
    """An HTTP client whose transport serves the files of ``directory`` (the network boundary)."""

    def handler(request: httpx.Request) -> httpx.Response:
        name = request.url.path.rsplit("/", 1)[-1]
        requests.append(name)
        path = directory / name
        if not path.is_file():
            return httpx.Response(404)
        body = path.read_bytes()
        return httpx.Response(200, content=body + b" " if name == tamper else body)

    return httpx.Client(transport=httpx.MockTransport(handler))


def test_fetch_downloads_verifies_and_skips_valid_files(catalog_dir: Path, tmp_path: Path) -> None:
    pins, requests = _pins_for(catalog_dir), []
    out = tmp_path / "data"
    paths = fetch_webshop(out, base_url="https://mirror.invalid/webshop", pins=pins,
                          client=_serving(catalog_dir, requests))
    assert [p.name for p in paths] == [PRODUCTS_FILE, ATTRIBUTES_FILE, HUMAN_FILE]
    for p in paths:
        assert p.read_bytes() == (catalog_dir / p.name).read_bytes()
    assert requests == [PRODUCTS_FILE, ATTRIBUTES_FILE, HUMAN_FILE]
    fetch_webshop(out, base_url="https://mirror.invalid", pins=pins,
                  client=_serving(catalog_dir, requests))
    assert len(requests) == 3  # valid files already in place are not fetched again
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp files left


def test_fetch_rejects_a_bad_checksum(catalog_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "data"
    with pytest.raises(ChecksumError, match=ATTRIBUTES_FILE):
        fetch_webshop(out, human=False, base_url="https://mirror.invalid",
                      pins=_pins_for(catalog_dir),
                      client=_serving(catalog_dir, [], tamper=ATTRIBUTES_FILE))
    assert sorted(p.name for p in out.iterdir()) == [PRODUCTS_FILE]  # the bad one never lands
    with pytest.raises(httpx.HTTPStatusError):
        fetch_webshop(tmp_path / "empty", base_url="https://mirror.invalid",
                      pins=_pins_for(catalog_dir), client=_serving(tmp_path / "none", []))


def test_user_sha256_pins(catalog_dir: Path, tmp_path: Path) -> None:
    git_only = {f: FilePin(p.git_blob_sha1) for f, p in _pins_for(catalog_dir).items()}
    with pytest.raises(ChecksumError, match="sha256"):
        fetch_webshop(tmp_path / "a", from_dir=catalog_dir, pins=git_only,
                      sha256={PRODUCTS_FILE: "0" * 64})
    good = {PRODUCTS_FILE: sha256_file(catalog_dir / PRODUCTS_FILE)}
    assert fetch_webshop(tmp_path / "b", from_dir=catalog_dir, pins=git_only, sha256=good)
    with pytest.raises(ValueError, match="contradicts"):
        fetch_webshop(tmp_path / "c", from_dir=catalog_dir, sha256={ATTRIBUTES_FILE: "1" * 64})


def test_read_checksums(tmp_path: Path) -> None:
    f = tmp_path / "SHA256SUMS"
    f.write_text(f"# pins\n{'a' * 64}  items_shuffle_1000.json\n{'B' * 64} *data/x.json\n")
    assert read_checksums(f) == {"items_shuffle_1000.json": "a" * 64, "x.json": "b" * 64}
    f.write_text("nonsense\n")
    with pytest.raises(ValueError, match="SHA256SUMS:1"):
        read_checksums(f)


def test_cli(catalog_dir: Path, tmp_path: Path) -> None:
    # a group app around the command (the project app collapses while it has one command)
    app = typer.Typer()
    app.callback()(lambda: None)
    app.command("fetch-webshop")(fetch_webshop_cmd)
    runner = CliRunner()
    res = runner.invoke(app, ["fetch-webshop", "--fixture", "--out", str(tmp_path / "fx")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "fx" / PRODUCTS_FILE).is_file()
    # the generated files are not the public ones: the pinned git blob ids reject them
    res = runner.invoke(app, ["fetch-webshop", "--from-dir", str(catalog_dir),
                              "--out", str(tmp_path / "real")])
    assert res.exit_code == 2 and "git blob sha1" in res.output
    res = runner.invoke(app, ["fetch-webshop", "--sha256", "nope", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "NAME=" in res.output
