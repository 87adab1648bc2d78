"""Bug injection operators on real source: each rewrites exactly one node and the result compiles."""

from __future__ import annotations

import difflib

import pytest

from leaf_train.taskpilot import mutate

SOURCE = '''\
def f(xs, n, flag):
    if n < 3 and flag:
        return xs[1:n]
    elif not flag:
        total = sum(range(n))
        return max(total, 7)
    return True
'''


def _changes(new: str) -> list[str]:
    return [l for l in difflib.unified_diff(SOURCE.splitlines(), new.splitlines(), lineterm="", n=0)
            if l[:1] in "+-" and not l.startswith(("+++", "---"))]


@pytest.mark.parametrize("operator, index, removed, added", [
    ("flip_compare", 0, "    if n < 3 and flag:", "    if n <= 3 and flag:"),
    ("flip_boolean", 0, "    if n < 3 and flag:", "    if n < 3 or flag:"),
    ("flip_boolean", 1, "    elif not flag:", "    elif flag:"),
    ("change_constant", 0, "    if n < 3 and flag:", "    if n < 4 and flag:"),
    ("change_constant", 3, "    return True", "    return False"),
    ("swap_args", 0, "        return max(total, 7)", "        return max(7, total)"),
    ("remove_return", 0, "        return xs[1:n]", "        xs[1:n]"),
    ("shift_bound", 0, "        return xs[1:n]", "        return xs[1:n + 1]"),
    ("shift_bound", 1, "        total = sum(range(n))", "        total = sum(range(n - 1))"),
])
def test_operator_rewrites_one_node(operator: str, index: int, removed: str, added: str) -> None:
    site = next(s for s in mutate.sites("m.py", SOURCE) if s.operator == operator and s.index == index)
    new = mutate.apply(SOURCE, site)
    assert new is not None
    assert _changes(new) == ["-" + removed, "+" + added]
    assert site.function == "f"


def test_drop_branch_removes_the_else_chain() -> None:
    site = next(s for s in mutate.sites("m.py", SOURCE) if s.operator == "drop_branch" and s.index == 0)
    new = mutate.apply(SOURCE, site)
    assert new is not None and "elif" not in new and "if n < 3 and flag:" in new
    compile(new, "m.py", "exec")


def test_sites_outside_functions_are_not_offered() -> None:
    assert mutate.sites("m.py", "X = 1 if 2 < 3 else 4\n") == []


def test_every_site_applies_and_compiles() -> None:
    found = mutate.sites("m.py", SOURCE)
    assert {s.operator for s in found} == set(mutate.OPERATORS)
    for site in found:
        new = mutate.apply(SOURCE, site)
        if new is not None:
            compile(new, "m.py", "exec")
            assert new != SOURCE
