"""The README's architecture, kept true: imports flow cli → agent / tasks → tools / llm / repo over the whole
leaf_cli package. Every import counts, deferred into a function or under TYPE_CHECKING alike: a deferred
import hides an edge, it does not remove it."""

from __future__ import annotations

import ast
from pathlib import Path

import leaf_cli

PACKAGE = Path(leaf_cli.__file__).parent

BOTTOM = {"tools", "llm", "repo"}
"""The rooms everything stands on: they import one another and the base, never a room above them."""
BASE = {"", "errors"}
"""The root package (empty by design) and the error tree: every room may import them."""

KNOWN_UPWARD: set[tuple[str, str]] = set()
"""Room edges that close a circle between rooms today, each with its reason. Shrink it; never grow it quietly."""


def _module(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join([*base, node.module] if node.module else base)


def module_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module of the package → the package's modules it imports (its own parent packages left out:
    importing any module runs them first, so they are no choice of the importer)."""
    paths = {_module(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = _absolute(node, name, path.name == "__init__.py")
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[name] |= {t for t in targets if t in paths and t != name and not name.startswith(t + ".")}
    return graph


def room(module: str) -> str:
    """`leaf_cli.tasks.grading.pytest` → `tasks`; `leaf_cli.errors` → `errors`; `leaf_cli` → ''."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def room_edges(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = {}
    for source, targets in graph.items():
        for target in targets:
            if room(source) != room(target):
                edges.setdefault((room(source), room(target)), []).append(f"{source} -> {target}")
    return edges


def _reaches(edges: set[tuple[str, str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(b for a, b in edges if a == node)
    return False


GRAPH = module_graph()
EDGES = room_edges(GRAPH)


def test_the_graph_sees_real_edges_of_every_kind() -> None:
    assert "leaf_cli.agent" in GRAPH["leaf_cli.tasks.runner.attempt"]  # `from leaf_cli.agent import run_episode`
    assert "leaf_cli.llm.messages" in GRAPH["leaf_cli.tools.host"]  # deferred into serve()
    assert "leaf_cli.tasks.format.task" in GRAPH["leaf_cli.tasks.runner.placement"]  # under TYPE_CHECKING
    assert {"cli", "agent", "tasks", "tools", "llm", "repo", "ui", "models"} <= {room(m) for m in GRAPH}


def test_nothing_imports_the_cli() -> None:
    users = [e for (a, b), found in EDGES.items() if b == "cli" and a != "__main__" for e in found]
    assert users == [], users  # `python -m leaf_cli` (__main__) is the one way in besides the `leaf` script


def test_only_the_cli_imports_the_ui() -> None:
    users = [e for (a, b), found in EDGES.items() if b == "ui" and a not in {"cli", "__main__"} for e in found]
    assert users == [], users  # the core emits events; the front ends render them


def test_the_bottom_rooms_import_nothing_above_them() -> None:
    upward = [e for (a, b), found in EDGES.items() if a in BOTTOM and b not in BOTTOM | BASE for e in found]
    assert upward == [], upward


def test_rooms_import_one_another_in_one_direction() -> None:
    edges = set(EDGES) - set(KNOWN_UPWARD)
    circles = sorted(f"{a} <-> {b}: {EDGES[(a, b)][0]}" for a, b in edges if _reaches(edges, b, a))
    assert circles == [], circles
    for a, b in KNOWN_UPWARD:  # an exception that no longer happens is taken off the list
        assert (a, b) in EDGES, f"{a} -> {b} is gone: remove it from KNOWN_UPWARD"


def test_no_two_modules_import_each_other() -> None:
    pairs = sorted(f"{a} <-> {b}" for a, targets in GRAPH.items() for b in targets if a < b and a in GRAPH[b])
    assert pairs == [], pairs


def test_the_rules_catch_a_circle_and_an_upward_import(tmp_path: Path) -> None:
    pkg = tmp_path / "leaf_cli"
    for folder in ("tools", "agent", "cli"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "tools" / "a.py").write_text("def f():\n    from leaf_cli.agent import b\n")  # deferred, upward
    (pkg / "agent" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                        "    from leaf_cli.tools.a import f\nfrom . import c\n")
    (pkg / "agent" / "c.py").write_text("from ..cli import main\n")
    graph = module_graph(pkg)
    assert graph["leaf_cli.tools.a"] == {"leaf_cli.agent", "leaf_cli.agent.b"} and "leaf_cli.tools.a" in graph["leaf_cli.agent.b"]
    assert graph["leaf_cli.agent.c"] == {"leaf_cli.cli"}  # relative imports resolved
    assert ("tools", "agent") in room_edges(graph) and ("agent", "cli") in room_edges(graph)
