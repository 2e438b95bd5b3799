"""The layering a newcomer relies on, checked on the source (every import, lazy ones included).

    flows, amc.cli            orchestration and commands
    amc.monitor               checks of a deployed model (drift, calibration)
    amc.pipeline, amc.sweeps  one module per stage (the main pipeline; the evidence sweep)
    amc.runner, amc.estimate  running methods over tasks
    amc.grpo, amc.reports     fine-tuning the agent (the white-box reference); documents
    amc.smc amc.envs amc.priors amc.value amc.tracking amc.results amc.stats   the method, its parts
    amc.protocols amc.registry amc.config                             contracts and config
    amc.types amc.errors                                              records

Arrows point down (or sideways inside one layer, never in a circle); the SMC engine itself
depends only on the contracts, never on a concrete environment, prior or value.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYERS: dict[str, int] = {
    "amc": 0, "amc.types": 0, "amc.ports": 0, "amc.errors": 0,
    "amc.protocols": 1, "amc.registry": 1, "amc.config": 1,
    "amc.smc": 2, "amc.envs": 2, "amc.priors": 2, "amc.value": 2, "amc.tracking": 2,
    "amc.results": 2, "amc.stats": 2,
    "amc.runner": 3, "amc.estimate": 3, "amc.grpo": 3, "amc.reports": 3,
    "amc.pipeline": 4, "amc.sweeps": 4,
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
