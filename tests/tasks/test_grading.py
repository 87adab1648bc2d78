"""Grading real toolz tasks: gold resolves, empty does not, partial and test-tampering patches fail."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from leaf_cli.tasks import Applied, Task, grade, make_sandbox
from leaf_cli.tasks.envs.sandbox import SubprocessSandbox

from .conftest import SECOND_BUG, SECOND_OK, TAKE_BUG, TESTS

P2P_SKIP = f"{TESTS}::test_remove"


def _task(tasks: list[Task], name: str) -> Task:
    return next(t for t in tasks if t.instance_id.endswith("." + name))


def _edit_patch(before: str, after: str, path: str) -> str:
    """A git-style patch turning the text `before` of `path` into `after`."""
    lines = difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{path}", f"b/{path}")
    return f"diff --git a/{path} b/{path}\n" + "".join(lines)


@pytest.fixture(scope="module")
def graded(toolz_tasks):
    path, tasks = toolz_tasks
    return path.parent, tasks, SubprocessSandbox()


def test_gold_resolves_and_empty_does_not(graded) -> None:
    base, tasks, sandbox = graded
    for task in tasks:
        gold = grade(task, task.patch, sandbox, base_dir=base)
        assert gold.resolved, gold
        assert gold.patch_applied == Applied.GIT_APPLY
        assert set(gold.f2p.values()) == {"passed"} and set(gold.p2p.values()) == {"passed"}
        empty = grade(task, "", sandbox, base_dir=base)
        assert not empty.resolved and empty.infra_failure is None
        assert empty.patch_applied == Applied.EMPTY
        assert "failed" in empty.f2p.values() and set(empty.p2p.values()) == {"passed"}


def test_partial_patch_is_not_resolved(graded) -> None:
    base, tasks, sandbox = graded
    task = _task(tasks, "two")
    buggy = _snapshot_text(task, base, "toolz/itertoolz.py")
    assert SECOND_BUG in buggy and TAKE_BUG in buggy
    verdict = grade(task, _edit_patch(buggy, buggy.replace(SECOND_BUG, SECOND_OK), "toolz/itertoolz.py"),
                    sandbox, base_dir=base)
    assert not verdict.resolved and verdict.infra_failure is None
    assert verdict.f2p == {f"{TESTS}::test_second": "passed", f"{TESTS}::test_take": "failed"}


def test_tampering_with_tests_is_undone(graded) -> None:
    """The patch rewrites the failing test and adds a conftest that skips everything: both are restored."""
    base, tasks, sandbox = graded
    task = _task(tasks, "second")
    tests = _snapshot_text(task, base, TESTS)
    line = "    assert second('ABCDE') == 'B'"
    assert line in tests
    tamper = _edit_patch(tests, tests.replace(line, "    assert True"), TESTS)
    conftest = ("diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n"
                "@@ -0,0 +1,2 @@\n+def pytest_runtest_setup(item):\n+    __import__('pytest').skip('tampered')\n")
    verdict = grade(task, tamper + conftest, sandbox, base_dir=base)
    assert verdict.patch_applied == Applied.GIT_APPLY
    assert set(verdict.restored) == {TESTS, "conftest.py"}
    assert not verdict.resolved
    assert verdict.f2p == {f"{TESTS}::test_second": "failed"}


def test_fuzzy_patch_uses_the_ladder(graded) -> None:
    """A hunk whose line numbers are off by many lines still applies (git apply finds it; patch fuzzes)."""
    base, tasks, sandbox = graded
    task = _task(tasks, "second")
    moved = task.patch.replace("@@ -382,", "@@ -300,").replace("@@ -383,", "@@ -300,")
    verdict = grade(task, moved, sandbox, base_dir=base)
    assert verdict.resolved
    garbage = grade(task, "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n", sandbox, base_dir=base)
    assert garbage.patch_applied == Applied.FAILED and not garbage.resolved


def test_hidden_test_patch_is_applied_at_grading(graded) -> None:
    base, tasks, sandbox = graded
    task = _task(tasks, "drop")
    assert "test_drop_many" not in _snapshot_text(task, base, TESTS)
    assert grade(task, task.patch, sandbox, base_dir=base).f2p == {f"{TESTS}::test_drop_many": "passed"}


def test_missing_suite_is_an_infra_failure(graded) -> None:
    """Node ids that do not exist: no evidence the tests ran, labelled, not silently unresolved."""
    base, tasks, sandbox = graded
    task = _task(tasks, "second").model_copy(update={"FAIL_TO_PASS": ["nope/test_x.py::test_y"], "PASS_TO_PASS": []})
    verdict = grade(task, task.patch, sandbox, base_dir=base)
    assert not verdict.resolved and verdict.infra_failure == "no_report"
    assert verdict.f2p == {"nope/test_x.py::test_y": "missing"}


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install -y bubblewrap)")
def test_bwrap_grades_gold(graded) -> None:
    base, tasks, _ = graded
    task = _task(tasks, "second")
    verdict = grade(task, task.patch, make_sandbox("bwrap"), base_dir=base)
    assert verdict.resolved and verdict.sandbox == "bwrap"


def _snapshot_text(task: Task, base: Path, rel: str) -> str:
    from leaf_cli.tasks import snapshot

    return (snapshot(task, base) / rel).read_text()


def test_skipped_p2p_fails_unless_p2p_skip_ok(graded) -> None:
    """The issue's rule is strict (every P2P passed); `p2p_skip_ok` gives SWE-bench v5's (skipped P2P kept).
    A real run: the P2P test is skipped by a test_patch marker, the F2P fixed by the gold patch."""
    base, tasks, sandbox = graded
    task = _task(tasks, "second")
    skipped = P2P_SKIP
    tests = _snapshot_text(task, base, TESTS)
    assert "def test_remove():" in tests
    task = task.model_copy(update={"test_patch": _edit_patch(tests, tests.replace(
        "def test_remove():", "@__import__('pytest').mark.skip('flaky upstream')\ndef test_remove():"), TESTS)})
    strict = grade(task, task.patch, sandbox, base_dir=base)
    assert strict.p2p[skipped] == "skipped" and strict.f2p_passed == 1
    assert not strict.resolved and strict.infra_failure is None
    lenient = grade(task, task.patch, sandbox, base_dir=base, p2p_skip_ok=True)
    assert lenient.resolved and lenient.p2p[skipped] == "skipped"
