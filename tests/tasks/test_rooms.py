"""The rooms of leaf_cli.tasks never shadow its public names: importing a room binds it on the package, so a
room called like a public name (`grade`) would replace the function for everyone imported after it."""

from __future__ import annotations

import importlib
import pkgutil
import types

import leaf_cli.tasks

from ..test_architecture import module_graph


def test_every_public_name_survives_importing_every_room() -> None:
    rooms = [m.name for m in pkgutil.walk_packages(leaf_cli.tasks.__path__, "leaf_cli.tasks.")]
    assert {"leaf_cli.tasks.format", "leaf_cli.tasks.envs", "leaf_cli.tasks.grading", "leaf_cli.tasks.runner",
            "leaf_cli.tasks.importers"} <= set(rooms)
    for name in rooms:
        importlib.import_module(name)
    modules = sorted(n for n in leaf_cli.tasks.__all__ if isinstance(getattr(leaf_cli.tasks, n), types.ModuleType))
    assert modules == [], modules
    assert callable(leaf_cli.tasks.grade) and leaf_cli.tasks.grade.__module__ == "leaf_cli.tasks.grading.choose"


RANK = {"format": 0, "envs": 1, "grading": 2, "importers": 3, "exporters": 3, "runner": 3}
"""The README's picture of leaf_cli.tasks: a room imports only rooms of a lower rank (format at the bottom)."""


def task_room_edges(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    def room_of(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 3 and parts[:2] == ["leaf_cli", "tasks"] else None

    edges: dict[tuple[str, str], list[str]] = {}
    for source, targets in graph.items():
        for target in targets:
            a, b = room_of(source), room_of(target)
            if a and b and a != b:
                edges.setdefault((a, b), []).append(f"{source} -> {target}")
    return edges


def upward(edges: dict[tuple[str, str], list[str]]) -> list[str]:
    return sorted(e for (a, b), found in edges.items() if RANK.get(a, -1) <= RANK.get(b, 99) for e in found)


def test_the_rooms_of_tasks_import_downward_only() -> None:
    edges = task_room_edges(module_graph())
    assert ("grading", "envs") in edges and ("runner", "grading") in edges  # the walk sees the rooms' imports
    assert set(RANK) == {a for a, _ in edges} | {b for _, b in edges}  # every room is ranked
    assert upward(edges) == []


def test_the_rank_rule_catches_an_upward_and_a_sideways_import() -> None:
    graph = {"leaf_cli.tasks.envs.image": {"leaf_cli.tasks.importers.harbor"},
             "leaf_cli.tasks.importers.harbor": {"leaf_cli.tasks.exporters.harbor", "leaf_cli.tasks.format.task"}}
    assert upward(task_room_edges(graph)) == ["leaf_cli.tasks.envs.image -> leaf_cli.tasks.importers.harbor",
                                              "leaf_cli.tasks.importers.harbor -> leaf_cli.tasks.exporters.harbor"]
