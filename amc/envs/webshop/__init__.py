"""WebShop: find and buy a product matching an instruction (text mode, 1,000 products).

- :mod:`.benchmark` -- its :class:`~amc.envs.benchmark.Benchmark` record (:mod:`.prompts`: prompts).
- :mod:`.env` -- the page-state environment and its suite (search, click, forced buy).
- :mod:`.catalog` -- the product catalog and its BM25 search index.
- :mod:`.data` -- ``amc fetch webshop``: pinned, verified download of the public files.
- :mod:`.fixture` -- a small generated catalog for demos and tests.
- :mod:`.reward` -- the benchmark's reward (attributes, options, price, type).
"""
