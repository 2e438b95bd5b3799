"""Cost of the in-process WebShop: catalog load + BM25 index, search, step and fork.

Runs on a generated 1,000-product catalog (the size of the paper's setting), so it needs no
download. Usage: ``python -m benchmarks.webshop_env`` (writes its section of
docs/benchmarks.md).
"""

from __future__ import annotations

import tempfile
import time

import numpy as np

from amc.envs.webshop.catalog import load_catalog
from amc.envs.webshop.env import WebShopOptions, WebShopSuite
from amc.envs.webshop.fixture import write_fixture_catalog
from benchmarks._report import write_section


def _per_call_us(fn, n: int) -> float:
    t = time.perf_counter()
    for i in range(n):
        fn(i)
    return (time.perf_counter() - t) / n * 1e6


def main() -> None:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as d:
        write_fixture_catalog(d, n_products=1000)
        t = time.perf_counter()
        catalog = load_catalog(d, 1000)
        load_s = time.perf_counter() - t
        suite = WebShopSuite(WebShopOptions(data_dir=d), catalog=catalog)
        words = ["shirt", "mug", "case", "serum", "shoes", "pillow", "cotton", "black", "large",
                 "slim", "free", "safe"]
        queries = [" ".join(rng.choice(words, size=3)) + f" {i}" for i in range(300)]
        search_us = _per_call_us(lambda i: catalog._search(queries[i]), len(queries))
        env = suite.make()
        env.reset("0")
        asin = env.goal["asin"].lower()
        script = [f"search[{catalog.by_asin[env.goal['asin']]['Title']}]", f"click[{asin}]",
                  "click[description]", "click[< prev]"]

        def episode(_: int) -> None:
            e = suite.make()
            e.reset("0")
            for a in script:
                e.step(a)

        step_us = _per_call_us(episode, 300) / len(script)  # search results are cached
        for a in script[:2]:
            env.step(a)
        fork_us = _per_call_us(lambda _: env.fork(), 5000)
    body = (
        "Script: `benchmarks/bench_webshop_env.py` (generated 1,000-product catalog).\n\n"
        "| what | cost |\n|---|---|\n"
        f"| load catalog + build goals + BM25 index | {load_s * 1e3:.0f} ms (once per setting) |\n"
        f"| search, uncached (1,000 docs, top 50) | {search_us:.0f} µs |\n"
        f"| step (cached search / click), incl. page render | {step_us:.0f} µs |\n"
        f"| fork (session copy) | {fork_us:.1f} µs |\n"
    )
    print(body)
    write_section("webshop_env", "WebShop in-process environment", body)


if __name__ == "__main__":
    main()
