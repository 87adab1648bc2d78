"""The modules of `leaf_cli.tasks` import one another in one direction: no circle, not even through an
import deferred into a function (a deferred import hides a circle; it does not remove it)."""

from __future__ import annotations

import ast
from pathlib import Path

import leaf_cli.tasks

ROOT = Path(leaf_cli.tasks.__file__).parent


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[name] |= {t for t in targets if t in modules and t != name and not name.startswith(t + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = "done"

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found


def test_tasks_modules_have_no_import_circle() -> None:
    graph = _graph()
    assert "leaf_cli.tasks.envs.docker" in graph["leaf_cli.tasks.envs.backends"]  # the graph sees real edges
    cycles = [c for c in _cycles(graph) if "leaf_cli.tasks" not in c]  # the package's lazy exports are a map, not a use
    assert cycles == [], cycles
