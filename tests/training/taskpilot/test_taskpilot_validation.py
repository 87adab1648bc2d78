"""Every validation rule's acceptance and rejection path, on a real git repository and its real pytest
suite, run in the eval machinery's sandbox (bwrap where installed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.tasks import make_sandbox
from leaf_train.taskpilot.candidate import Candidate
from leaf_train.taskpilot.config import SynthConfig
from leaf_train.taskpilot.diffs import file_diff
from leaf_train.taskpilot.snapshot import Snapshot, build_snapshot, environment
from leaf_train.taskpilot.sources import resolve
from leaf_train.taskpilot.validate import validate

from taskpilot_mathx import CORE

CLAMP_BUG = CORE.replace("    if value < low:\n        return low", "    if value > low:\n        return low")


@pytest.fixture(scope="module")
def world(mathx_repo: Path, session_cache: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("val-run")
    sandbox = make_sandbox(None)
    (src,) = resolve(str(mathx_repo), session_cache)
    snap, cover = build_snapshot(src, out, session_cache, sandbox, tests=[], budget_s=60, pip_packages=[])
    assert snap.status == "ok", snap.reason
    return snap, out, sandbox, environment(snap, out)


def _cand(snap: Snapshot, bug: str = "", gold: str = "", test_patch: str = "", generator: str = "procedural",
          statement: str = "", name: str = "c") -> Candidate:
    return Candidate(id=name, snapshot=snap.id, generator=generator, bug_patch=bug, patch=gold, test_patch=test_patch,
                     problem_statement=statement)


def _run(world, cand: Candidate, **cfg):  # noqa: ANN001, ANN202
    snap, out, sandbox, env = world
    return validate(cand, snap, out, env, sandbox, SynthConfig(out=out, **cfg))


def test_snapshot_records_exact_passing_node_ids(world) -> None:  # noqa: ANN001
    snap = world[0]
    assert len(snap.passing) == 10 and "tests/test_core.py::test_is_even[3-False]" in snap.passing


def test_a_real_bug_validates_with_f2p_p2p_and_a_start_commit(world) -> None:  # noqa: ANN001
    snap = world[0]
    bug = file_diff("mathx/core.py", CORE, CLAMP_BUG)
    record = _run(world, _cand(snap, bug, file_diff("mathx/core.py", CLAMP_BUG, CORE)))
    assert record.ok, record.detail
    assert record.f2p == [f"tests/test_core.py::test_clamp_{n}" for n in ("high", "inside", "low")]
    assert len(record.p2p) == 7 and not set(record.f2p) & set(record.p2p)
    assert (record.gold_runs, record.gold_resolved, record.empty_resolved) == (3, 3, 0)
    assert record.base_commit != snap.commit
    assert "assert" in record.observations["tests/test_core.py::test_clamp_low"]


@pytest.mark.parametrize("case, reason", [
    ("bug_does_not_apply", "bug_patch_does_not_apply"),
    ("no_failing_test", "no_f2p"),
    ("too_many", "too_many_f2p"),
    ("gold_does_not_apply", "gold_patch_does_not_apply"),
    ("gold_does_not_fix", "gold_fails_f2p"),
    ("gold_breaks_other", "gold_breaks_p2p"),
    ("over_budget", "suite_over_budget"),
    ("import_error", "suite_does_not_run"),
])
def test_each_rule_rejects_with_its_reason(world, case: str, reason: str) -> None:  # noqa: ANN001
    snap = world[0]
    bug = file_diff("mathx/core.py", CORE, CLAMP_BUG)
    gold = file_diff("mathx/core.py", CLAMP_BUG, CORE)
    cfg: dict = {}
    if case == "bug_does_not_apply":
        bug = bug.replace("if value < low:", "if value <= lowest:")
    elif case == "no_failing_test":
        changed = CORE.replace('"mean of nothing"', '"mean of nothing at all"')
        bug, gold = file_diff("mathx/core.py", CORE, changed), file_diff("mathx/core.py", changed, CORE)
    elif case == "too_many":
        cfg["max_f2p"] = 1
    elif case == "gold_does_not_apply":
        gold = gold.replace("if value > low:", "if value > lowest:")
    elif case == "gold_does_not_fix":
        gold = file_diff("mathx/core.py", CLAMP_BUG, CLAMP_BUG.replace("return value\n", "return value  # checked\n"))
    elif case == "gold_breaks_other":
        gold = file_diff("mathx/core.py", CLAMP_BUG, CORE.replace("return sum(values) / len(values)", "return 0"))
    elif case == "over_budget":
        cfg["suite_budget_s"] = 0.01
    elif case == "import_error":
        broken = CORE + "\nraise RuntimeError('broken at import')\n"
        bug, gold = file_diff("mathx/core.py", CORE, broken), file_diff("mathx/core.py", broken, CORE)
    record = _run(world, _cand(snap, bug, gold, name=case), **cfg)
    assert not record.ok
    assert record.reason == reason, record.detail


NEW_TEST = "from mathx.core import double\n\n\ndef test_double():\n    assert double(4) == 8\n"
WITH_DOUBLE = CORE + "\n\ndef double(x):\n    return 2 * x\n"


def test_a_feature_task_with_hidden_tests_validates(world) -> None:  # noqa: ANN001
    snap = world[0]
    cand = _cand(snap, gold=file_diff("mathx/core.py", CORE, WITH_DOUBLE),
                 test_patch=file_diff("tests/test_new.py", "", NEW_TEST).replace("--- a/tests/test_new.py", "--- /dev/null")
                 .replace("diff --git a/tests/test_new.py b/tests/test_new.py\n", "diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n"),
                 generator="llm", statement="Add double(x).", name="feature")
    record = _run(world, cand)
    assert record.ok, record.detail
    assert record.f2p == ["tests/test_new.py::test_double"] and record.base_commit == snap.commit


@pytest.mark.parametrize("fields, reason", [
    ({"statement": ""}, "no_statement"),
    ({"gold": ""}, "empty_gold_patch"),
    ({"test_patch": ""}, "no_hidden_tests"),
])
def test_llm_candidates_missing_a_part_are_rejected(world, fields: dict, reason: str) -> None:  # noqa: ANN001
    snap = world[0]
    base = {"gold": file_diff("mathx/core.py", CORE, WITH_DOUBLE), "test_patch": "diff --git a/tests/x b/tests/x\n",
            "statement": "Add double(x)."}
    base.update(fields)
    record = _run(world, _cand(snap, generator="llm", name=reason, **base))
    assert (record.ok, record.reason) == (False, reason)
