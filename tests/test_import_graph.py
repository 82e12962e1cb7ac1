"""The tree is the data flow: no module of optimizer/ imports, even inside a function, one that imports it
back, and no stage (optimizer.plan, optimizer.edits, ...) depends on a stage that depends on it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "optimizer"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every optimizer module this file imports, at module level or inside a function (TYPE_CHECKING too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module in modules:
                found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules}
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def stage_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of the graph as a path that ends where it starts, or [] (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return []


def test_the_graph_walk_sees_module_and_function_level_imports():
    graph = import_graph()
    assert "optimizer.plan._build" in graph["optimizer.plan"]  # the package re-exports
    assert "optimizer.plan" in graph["optimizer.cli"]  # imported inside the command functions
    assert "optimizer.plan" in graph["optimizer.batch"]  # inside run_job and under TYPE_CHECKING
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_no_module_of_optimizer_is_in_an_import_cycle():
    cycle = find_cycle(import_graph())
    assert not cycle, " -> ".join(cycle)


def _stage_graph() -> dict[str, set[str]]:
    stages: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        stages.setdefault(stage_of(module), set()).update(stage_of(t) for t in targets)
    return {stage: targets - {stage} for stage, targets in stages.items()}


def test_no_stage_is_in_an_import_cycle():
    cycle = find_cycle(_stage_graph())
    assert not cycle, " -> ".join(cycle)


@pytest.mark.parametrize("upstream", ["optimizer.ir", "optimizer.catalog", "optimizer.check", "optimizer.fusion",
                                      "optimizer.latency", "optimizer.solver", "optimizer.rewrite"])
def test_the_stages_before_the_plan_import_nothing_after_it(upstream):
    later = {"optimizer.plan", "optimizer.edits", "optimizer.export", "optimizer.study", "optimizer.batch",
             "optimizer.calibrate", "optimizer.cli"}
    assert not _stage_graph()[upstream] & later
