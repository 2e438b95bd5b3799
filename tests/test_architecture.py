"""The layering a newcomer relies on, checked on the source (every import, lazy ones included).

    flows, amc.cli            orchestration and commands
    amc.monitor               checks of a deployed model (drift, calibration)
    amc.pipeline              one module per stage, the stage table and the stages' helpers
    amc.runner, amc.estimate  running methods over tasks
    amc.grpo, amc.sft         fine-tuning the agent (GRPO, the white-box reference; SFT, the
                              fine-tuned prior); amc.reports: documents
    amc.smc amc.envs amc.priors amc.value amc.tracking amc.results amc.stats   the method, its parts
    amc.run_hash                                                      what a results file hashes
    amc.protocols amc.registry amc.config                             contracts and config
    amc.types amc.errors amc.retry amc.plots                          records, helpers

Arrows point down (or sideways inside one layer, never in a circle); the SMC engine itself
depends only on the contracts, never on a concrete environment, prior or value. Module-level
circles are checked too, over every import a module can make: static, function-local,
relative, and by string (``importlib.import_module`` of a constant, of an f-string prefix, or
of a table of ``"module"``/``"module:function"`` strings), in ``amc/``, ``flows/`` and
``benchmarks/``. Benchmarks are named only in their own folders (``amc/envs/<bench>/``): the
priors, the value model and the pipeline look their :class:`~amc.envs.benchmark.Benchmark`
records up by name.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYERS: dict[str, int] = {
    "amc": 0, "amc.types": 0, "amc.ports": 0, "amc.errors": 0, "amc.retry": 0, "amc.plots": 0,
    "amc.protocols": 1, "amc.registry": 1, "amc.config": 1,
    "amc.smc": 2, "amc.envs": 2, "amc.priors": 2, "amc.value": 2, "amc.tracking": 2,
    "amc.results": 2, "amc.stats": 2, "amc.progress": 2, "amc.run_hash": 2,
    "amc.runner": 3, "amc.estimate": 3, "amc.grpo": 3, "amc.sft": 3,
    "amc.reports": 3,
    "amc.pipeline": 4,
    "amc.monitor": 5,
    "amc.cli": 6, "amc.__main__": 6, "flows": 6,
}


def _modules() -> dict[str, Path]:
    mods = {}
    for p in [*REPO.glob("amc/**/*.py"), *REPO.glob("flows/**/*.py")]:
        name = ".".join(p.relative_to(REPO).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    return mods


def _group(module: str) -> str:
    parts = module.split(".")
    return "flows" if parts[0] == "flows" else ".".join(parts[:2])


def _edges() -> dict[str, set[str]]:
    """module -> project modules it imports (anywhere in the file)."""
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = defaultdict(set)
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text())):
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [resolve(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [resolve(f"{node.module}.{a.name}") or resolve(node.module)
                           for a in node.names]
            edges[m].update(t for t in targets if t and t != m)
    return edges


def _all_modules() -> dict[str, Path]:
    mods = {}
    for p in [*REPO.glob("amc/**/*.py"), *REPO.glob("flows/**/*.py"),
              *REPO.glob("benchmarks/**/*.py")]:
        name = ".".join(p.relative_to(REPO).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    return mods


def _string_imports(tree: ast.AST, node: ast.Call, mods: dict[str, Path]) -> list[str]:
    """Modules an ``import_module(...)``/``__import__(...)`` call can load."""
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        prefix = str(arg.values[0].value)
        return [m for m in mods if m.startswith(prefix)]
    # a computed name: any module named by a string constant of this file may be loaded
    return [c.value.split(":")[0] for c in ast.walk(tree)
            if isinstance(c, ast.Constant) and isinstance(c.value, str)
            and c.value.split(":")[0] in mods and "." in c.value]


def _module_edges() -> dict[str, set[str]]:
    """module -> modules it may import: static, function-local, relative and by string."""
    mods = _all_modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = defaultdict(set)
    for m, p in mods.items():
        tree = ast.parse(p.read_text())
        pkg = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                names = [f"{base}.{a.name}" if resolve(f"{base}.{a.name}") == f"{base}.{a.name}"
                         else base for a in node.names]
            elif (isinstance(node, ast.Call) and node.args and getattr(
                    node.func, "attr", getattr(node.func, "id", None)) in (
                    "import_module", "__import__")):
                names = _string_imports(tree, node, mods)
            edges[m].update(t for n in names if (t := resolve(n)) and t != m)
    return edges


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                comp.append(w)
            if comp:
                out.append(sorted([v, *comp]))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


PLUGIN_LOADER = "amc.registry"
"""Loads the built-in component modules by name (``BUILTIN_MODULES``); each of them registers
itself with the registry, so these string imports point back up by design."""


def _plugin_edges() -> set[tuple[str, str]]:
    """The one allowed kind of back edge, each named: ``amc.registry -> m`` for every ``m`` of
    its ``BUILTIN_MODULES`` table (the modules import the registry to register themselves)."""
    from amc.registry import BUILTIN_MODULES

    return {(PLUGIN_LOADER, m) for m in BUILTIN_MODULES}


def test_no_module_level_circles_static_lazy_or_by_string() -> None:
    edges = _module_edges()
    assert edges["amc.priors.planner_mix"] >= {"amc.envs.benchmarks", "amc.envs.replay"}
    allowed = _plugin_edges()
    assert {b for _, b in allowed} <= edges[PLUGIN_LOADER]  # the string table is read
    assert "amc.envs.synthetic" in edges[PLUGIN_LOADER]
    assert {"amc.pipeline.collect", "amc.pipeline.report"} <= edges["amc.pipeline.round"]
    without_plugins = {m: {b for b in bs if (m, b) not in allowed} for m, bs in edges.items()}
    assert _circles(without_plugins) == []
    # the value trainers: train dispatches to train_head; both share train_run, below them
    assert {"amc.value.train_head", "amc.value.train_run"} <= edges["amc.value.train"]
    assert "amc.value.train" not in edges["amc.value.train_head"] | edges["amc.value.train_run"]


def test_the_circle_finder_sees_lazy_and_string_imports() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


DVC_STAGES = ("collect", "dataset", "train", "evaluate", "promote", "report")


def test_dvc_stages_are_peers() -> None:
    """A stage imports shared helpers (artifacts, calibration, rounds, lineage, params, ...),
    never another stage; the stage table (``amc.pipeline.round``) sits above them all. The
    optional GRPO stage (``amc.grpo.stage``, its own DVC project) imports no pipeline module."""
    stages = {f"amc.pipeline.{s}" for s in DVC_STAGES} | {"amc.grpo.stage"}
    edges = _module_edges()
    assert sorted(f"{a} -> {b}" for a in stages for b in edges[a] & stages) == []
    assert not any("amc.pipeline.round" in edges[m] for m in edges if m != "amc.pipeline.round")


BENCHMARK_NAMES = ("textcraft", "sciworld", "webshop")


def test_priors_value_and_pipeline_name_no_benchmark() -> None:
    named = []
    for m, p in _all_modules().items():
        if not m.startswith(("amc.priors", "amc.value", "amc.pipeline")):
            continue
        tree = ast.parse(p.read_text())
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}  # docstrings
        named += [f"{m}: {c.value!r}" for c in ast.walk(tree)
                  if isinstance(c, ast.Constant) and isinstance(c.value, str)
                  and id(c) not in docs and any(b in c.value.lower() for b in BENCHMARK_NAMES)]
        named += [f"{m}: {n.name}" for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
                  and any(b in n.name for b in BENCHMARK_NAMES)]
    assert named == []


def test_every_group_has_a_layer() -> None:
    assert {_group(m) for m in _modules()} <= set(LAYERS)


def test_imports_point_down() -> None:
    up = sorted(f"{a} -> {b}" for a, bs in _edges().items() for b in bs
                if LAYERS[_group(b)] > LAYERS[_group(a)])
    assert up == []


def test_no_circles_between_groups() -> None:
    g: dict[str, set[str]] = defaultdict(set)
    for a, bs in _edges().items():
        g[_group(a)].update(_group(b) for b in bs if _group(b) != _group(a))
    seen: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(n: str, path: list[str]) -> list[str] | None:
        seen[n] = 1
        for m in sorted(g[n]):
            if seen.get(m) == 1:
                return [*path, n, m]
            if m not in seen and (cycle := visit(m, [*path, n])):
                return cycle
        seen[n] = 2
        return None

    for n in sorted(g):
        if n not in seen:
            assert visit(n, []) is None


def test_the_engine_knows_only_the_contracts() -> None:
    engine = {b for a, bs in _edges().items() if _group(a) == "amc.smc" for b in bs}
    assert {_group(b) for b in engine} <= {"amc.smc", "amc.types", "amc.errors",
                                           "amc.protocols", "amc.registry", "amc.config"}


def test_files_and_engine_functions_stay_readable() -> None:
    long_files = sorted(str(p.relative_to(REPO)) for p in _modules().values()
                        if len(p.read_text().splitlines()) > 400)
    assert long_files == []
    long_fns = []
    for p in (REPO / "amc" / "smc").glob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > 60:
                    long_fns.append(f"{p.name}:{node.name} ({n} lines)")
    assert long_fns == []


def test_product_never_imports_a_study() -> None:
    """``studies/`` imports ``amc``; nothing under ``amc/`` or ``flows/`` imports ``studies``
    (module level, lazy or by string), so the installed package runs without the lab."""
    bad = []
    for top in ("amc", "flows"):
        for f in sorted((REPO / top).rglob("*.py")):
            for node in ast.walk(ast.parse(f.read_text())):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom)
                         and node.level == 0 else [])
                if isinstance(node, ast.Call) and node.args and isinstance(
                        node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    names.append(node.args[0].value)
                bad += [f"{f.relative_to(REPO)}: {n}" for n in names
                        if n == "studies" or n.startswith("studies.")]
    assert not bad, bad
