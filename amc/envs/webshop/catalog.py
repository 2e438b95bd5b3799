"""The WebShop product catalog, its goals and its BM25 search index, loaded once and shared.

A catalog directory holds the public WebShop files (``amc fetch webshop`` downloads them):

- ``items_shuffle_1000.json``: a list of scraped products (``asin``, ``name``,
  ``full_description``, ``small_description``, ``pricing`` such as ``"$12.99"`` or
  ``"$10.00$25.00"``, ``customization_options`` {name: [{value, image}]}, ``category``,
  ``query``, ``product_category`` ``"A › B › C"``...);
- ``items_ins_v2_1000.json``: ASIN -> {``attributes``[, ``instruction``,
  ``instruction_attributes``]}, the annotated attributes and synthetic instructions;
- ``items_human_ins.json`` (only for ``goals="human"``): ASIN -> [{``instruction``,
  ``instruction_attributes``, ``instruction_options``}].

Products are normalised exactly as the benchmark's ``load_products`` does (title, description,
bullet points, parsed prices, lower-cased options with ``/`` -> `` | ``, ``DUMMY_ATTR`` when a
product has no annotation). Goals are built as the AgentGym WebShop server builds them:

- synthetic: for each product with an instruction, one goal per combination of its option
  values (option names sorted), text ``"<instruction> with <name>: <value>, and ... , and price
  lower than <P> dollars"``; P is the larger of two distinct values drawn from the first four
  multiples of $10 above the product's price (no bound when fewer than two exist);
- human: one goal per human instruction with attributes (text + price bound as above, the
  instruction's own option strings).

The price draws and the final shuffle of the goal list use ``random.Random(seed)`` instances
with the server's seed 233 by default: a task id is an index into the shuffled list, so this is
what makes our task ids name the same goals as the benchmark's (the server seeds Python's
``random`` with 233 before both steps). A product with a price *range* is priced once, by a
uniform draw from its range with its own ``Random(seed)`` (unseeded upstream).

Search ranks the lower-cased ``title + description + first bullet point + options`` documents
with BM25 (``bm25s``, Lucene variant, k1=0.9, b=0.4 like pyserini's default searcher, English
stop words and the Porter stemmer like Lucene's English analyzer) and returns the top 50.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import threading
from collections.abc import Sequence
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import bm25s
import numpy as np

PRODUCTS_FILE = "items_shuffle_1000.json"
ATTRIBUTES_FILE = "items_ins_v2_1000.json"
HUMAN_FILE = "items_human_ins.json"

SEARCH_RETURN_N = 50
"""Results a search returns (the benchmark's top 50)."""
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
"""Candidate price bounds, $10 ... $990."""
NO_PRICE_BOUND = 1_000_000.0
"""The bound of a goal whose product is too expensive to draw one (no price text)."""


class MissingCatalogError(FileNotFoundError):
    """The catalog directory lacks files the requested setting needs."""

    def __str__(self) -> str:
        return str(self.args[0])


def required_files(goals: Literal["synthetic", "human"]) -> tuple[str, ...]:
    """Catalog files a goal source needs."""
    return (PRODUCTS_FILE, ATTRIBUTES_FILE) + ((HUMAN_FILE,) if goals == "human" else ())


def check_catalog(data_dir: Path, goals: Literal["synthetic", "human"] = "synthetic") -> None:
    """Raise :class:`MissingCatalogError` naming every missing file."""
    missing = [f for f in required_files(goals) if not (Path(data_dir) / f).is_file()]
    if missing:
        raise MissingCatalogError(
            f"WebShop catalog in {data_dir} lacks {', '.join(missing)}; run "
            f"`amc fetch webshop --out {data_dir}` (see docs/envs-webshop.md)"
        )


def _parse_pricing(pricing: str | None) -> tuple[list[float], str]:
    """``"$10.00$25.00"`` -> ([10.0, 25.0], "$10.0 to $25.0"); missing -> ([100.0], "$100.0")."""
    if not pricing:
        return [100.0], "$100.0"
    values = [float(Decimal(re.sub(r"[^\d.]", "", p))) for p in pricing.split("$")[1:]]
    if len(values) == 1:
        return values, f"${values[0]}"
    return values[:2], f"${values[0]} to ${values[1]}"


def normalize_product(raw: dict[str, Any], annotation: dict[str, Any]) -> dict[str, Any]:
    """One catalog record in the benchmark's internal form (keys used by pages and reward)."""
    p = dict(raw)
    small = p.get("small_description") or []
    pricing, price_tag = _parse_pricing(p.get("pricing"))
    options: dict[str, list[str]] = {}
    for name, contents in (p.get("customization_options") or {}).items():
        if contents is None:
            continue
        options[name.lower()] = [
            c["value"].strip().replace("/", " | ").lower() for c in contents
        ]
    p.update(
        Title=p["name"],
        Description=p.get("full_description") or "",
        BulletPoints=small if isinstance(small, list) else [small],
        Reviews=[],  # the benchmark's review file is disabled: every Reviews page is empty
        Rating="N.A.",
        pricing=pricing,
        Price=price_tag,
        options=options,
        Attributes=annotation.get("attributes", ["DUMMY_ATTR"]),
        instruction_text=annotation.get("instruction"),
        instruction_attributes=annotation.get("instruction_attributes"),
        query=str(p.get("query", "")).lower().strip(),
        category=p.get("category", ""),
        product_category=p.get("product_category", ""),
    )
    return p


def _price_bound(price: float, rng: random.Random) -> tuple[float, str]:
    """The goal's upper price bound and its instruction suffix."""
    candidates = [x for x in PRICE_RANGE if x > price][:4]
    if len(candidates) < 2:
        return NO_PRICE_BOUND, ""
    _, upper = sorted(rng.sample(candidates, 2))
    return upper, f", and price lower than {upper:.2f} dollars"


def synthetic_goals(
    products: Sequence[dict[str, Any]], prices: dict[str, float], seed: int = 233
) -> list[dict[str, Any]]:
    """One goal per (product with an instruction, combination of its option values)."""
    rng = random.Random(seed)  # the server's seeded draw order; see module docstring
    goals = []
    for p in products:
        if p.get("instruction_text") is None:
            continue
        upper, price_text = _price_bound(prices[p["asin"]], rng)
        names = sorted(p["options"])
        for combo in itertools.product(*(p["options"][n] for n in names)):
            goal_options = dict(zip(names, combo, strict=True))
            option_text = ", and ".join(f"{k}: {v}" for k, v in goal_options.items())
            option_text = f" with {option_text}" if option_text else ""
            goals.append({
                "asin": p["asin"], "category": p["category"], "query": p["query"],
                "name": p["Title"], "product_category": p["product_category"],
                "instruction_text": f"{p['instruction_text']}{option_text}{price_text}",
                "attributes": list(p["instruction_attributes"]),
                "price_upper": upper, "goal_options": goal_options,
            })
    return goals


def human_goals(
    products: Sequence[dict[str, Any]],
    prices: dict[str, float],
    human: dict[str, list[dict[str, Any]]],
    seed: int = 233,
) -> list[dict[str, Any]]:
    """One goal per human instruction that has attributes (WebShop's human-goal setting)."""
    rng = random.Random(seed)
    goals = []
    for p in products:
        for ins in human.get(p["asin"], []):
            if not ins.get("instruction_attributes"):
                continue
            upper, price_text = _price_bound(prices[p["asin"]], rng)
            goals.append({
                "asin": p["asin"], "category": p["category"], "query": p["query"],
                "name": p["name"], "product_category": p["product_category"],
                "instruction_text": ins["instruction"].strip(".") + price_text,
                "attributes": list(ins["instruction_attributes"]),
                "price_upper": upper, "goal_options": list(ins.get("instruction_options", [])),
            })
    return goals


def search_document(p: dict[str, Any]) -> str:
    """The text a product is indexed under (as the benchmark's index builder writes it)."""
    option_text = ", and ".join(f"{n}: {', '.join(v)}" for n, v in p["options"].items())
    first_bullet = p["BulletPoints"][0] if p["BulletPoints"] else ""
    return " ".join([p["Title"], p["Description"], first_bullet, option_text]).lower()


class Catalog:
    """Products, prices, goals and a BM25 index: immutable after construction, shared by envs."""

    def __init__(
        self,
        products: list[dict[str, Any]],
        goal_source: Literal["synthetic", "human"] = "synthetic",
        human: dict[str, list[dict[str, Any]]] | None = None,
        seed: int = 233,
    ) -> None:
        self.products = products
        self.by_asin = {p["asin"]: p for p in products}
        rng = random.Random(seed)
        # one price per product; a price range is resolved once by a seeded uniform draw
        self.prices = {
            p["asin"]: p["pricing"][0] if len(p["pricing"]) == 1 else rng.uniform(*p["pricing"][:2])
            for p in products
        }
        if goal_source == "human":
            self.goals = human_goals(products, self.prices, human or {}, seed)
        else:
            self.goals = synthetic_goals(products, self.prices, seed)
        random.Random(seed).shuffle(self.goals)  # the server's fixed goal order
        import Stemmer  # PyStemmer; imported here so the module loads for docs without it

        self._stemmer = Stemmer.Stemmer("porter")
        corpus = bm25s.tokenize(
            [search_document(p) for p in products],
            stopwords="en", stemmer=self._stemmer, show_progress=False,
        )
        self._bm25 = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
        self._bm25.index(corpus, show_progress=False)
        self._lock = threading.Lock()  # bm25s scoring is not documented as thread-safe
        self.search = lru_cache(maxsize=4096)(self._search)

    def _search(self, keywords: str) -> tuple[str, ...]:
        """ASINs of the top 50 products for ``keywords`` (score > 0), best first."""
        tokens = bm25s.tokenize(
            [keywords.lower()], stopwords="en", stemmer=self._stemmer,
            return_ids=False, show_progress=False,
        )[0]
        if not tokens:
            return ()
        with self._lock:
            scores = np.asarray(self._bm25.get_scores(tokens), dtype=np.float64)
        order = np.lexsort((np.arange(len(scores)), -scores))  # ties: catalog order
        hits = [int(i) for i in order[:SEARCH_RETURN_N] if scores[i] > 0]
        return tuple(self.products[i]["asin"] for i in hits)


def load_products(
    data_dir: Path, num_products: int | None = None
) -> list[dict[str, Any]]:
    """Read and normalise the first ``num_products`` products (bad and duplicate ASINs skipped)."""
    data_dir = Path(data_dir)
    raw = json.loads((data_dir / PRODUCTS_FILE).read_text())
    annotations = json.loads((data_dir / ATTRIBUTES_FILE).read_text())
    if num_products is not None:
        raw = raw[:num_products]
    seen: set[str] = set()
    out = []
    for r in raw:
        asin = r.get("asin")
        if not isinstance(asin, str) or asin == "nan" or len(asin) > 10 or asin in seen:
            continue
        seen.add(asin)
        out.append(normalize_product(r, annotations.get(asin, {})))
    return out


@lru_cache(maxsize=4)
def load_catalog(
    data_dir: str,
    num_products: int | None = 1000,
    goals: Literal["synthetic", "human"] = "synthetic",
    seed: int = 233,
) -> Catalog:
    """The catalog of ``data_dir`` (cached: every suite with the same settings shares one)."""
    path = Path(data_dir)
    check_catalog(path, goals)
    products = load_products(path, num_products)
    human = json.loads((path / HUMAN_FILE).read_text()) if goals == "human" else None
    return Catalog(products, goals, human, seed)
