"""The task file: SWE-bench fields, JSON-string test lists, unknown keys kept, malformed lines reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.tasks import DEFAULT_PROTECTED_PATHS, dump_tasks, load_tasks

ROW = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "problem_statement": "p", "patch": "d",
       "test_patch": "", "FAIL_TO_PASS": '["t.py::a"]', "PASS_TO_PASS": ["t.py::b", "t.py::a"], "version": "1.0",
       "created_at": "2024-01-01", "install_config": {"python": "3.11", "custom": 1}}


def test_round_trip_keeps_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(ROW) + "\n")
    (task,) = load_tasks(path).tasks
    assert task.FAIL_TO_PASS == ["t.py::a"] and task.tests == ["t.py::a", "t.py::b"]
    assert task.protected == list(DEFAULT_PROTECTED_PATHS)
    dump_tasks([task], tmp_path / "out.jsonl")
    again = json.loads((tmp_path / "out.jsonl").read_text())
    assert again["created_at"] == "2024-01-01" and again["install_config"]["custom"] == 1
    assert "timeouts" not in again  # defaults the file did not have are not invented


def test_malformed_lines_are_reported_with_numbers(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    rows = [json.dumps(ROW), "{oops", json.dumps({**ROW, "instance_id": "x", "FAIL_TO_PASS": "[nope"}),
            "", json.dumps(ROW), json.dumps({**ROW, "instance_id": "y"})]
    path.write_text("\n".join(rows) + "\n")
    loaded = load_tasks(path)
    assert [t.instance_id for t in loaded.tasks] == ["o__r-1", "y"]
    assert [e.line for e in loaded.errors] == [2, 3, 5]
    assert "not a JSON object" in loaded.errors[0].message
    assert "FAIL_TO_PASS" in loaded.errors[1].message
    assert "duplicate" in loaded.errors[2].message


def test_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(LeafError, match="not found"):
        load_tasks(tmp_path / "none.jsonl")


def test_relative_repo_resolves_against_the_task_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({**ROW, "repo": "repos/r"}) + "\n")
    loaded = load_tasks(path)
    assert loaded.tasks[0].repo_location(loaded.base_dir) == str((tmp_path / "repos" / "r").resolve())
    assert loaded.tasks[0].model_copy(update={"repo": "https://x/y.git"}).repo_location(tmp_path) == "https://x/y.git"
