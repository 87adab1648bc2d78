"""`--continue` says which run it continues, refuses an undone one unless asked, and numbers turns on;
`leaf runs` has a header, the model and the state; `leaf runs show` gives the diff and the conversation."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from tests.cli.fixcli import call, leaf, script, turn
from leaf_cli.repo.runs import runs_root
from leaf_cli.ui.review import show_diff


def two_turn_run(repo: Path, tmp_path: Path, name: str, *args: str) -> tuple[int, str]:
    spec = script(tmp_path / f"{name}.jsonl", turn(call("Write", file_path=f"{name}.txt", content=f"{name}\n")),
                  {"content": f"wrote {name}.txt"})
    result = leaf("fix", "--yes", "--workdir", str(repo), "--model", spec, *args)
    return result.exit_code, result.stderr


def turn_numbers(stderr: str) -> list[int]:
    return [int(n) for n in re.findall(r"^turn (\d+) ·", stderr, re.M)]


def test_continue_names_the_run_numbers_on_and_refuses_an_undone_one(git_repo: Path, tmp_path: Path) -> None:
    code, first = two_turn_run(git_repo, tmp_path, "one", "write one")
    assert code == 0 and turn_numbers(first) == [1, 2]
    run_one = leaf("runs", "--workdir", str(git_repo)).stdout.splitlines()[1].split("\t")[0]
    code, second = two_turn_run(git_repo, tmp_path, "two", "--continue", "and two")
    assert code == 0, second
    assert f"Continuing run {run_one} (kept): write one" in second
    assert turn_numbers(second) == [3, 4]  # carried on from the first run's two turns
    assert leaf("undo", "--workdir", str(git_repo)).exit_code == 0
    code, refused = two_turn_run(git_repo, tmp_path, "three", "--continue", "and three")
    assert code == 2 and "is undone" in refused and "--continue-undone" in refused
    assert not (git_repo / "three.txt").exists()
    code, allowed = two_turn_run(git_repo, tmp_path, "three", "--continue-undone", "and three")
    assert code == 0 and "(undone: its changes are not in the files)" in allowed and (git_repo / "three.txt").exists()


def test_undo_and_continue_take_the_newer_of_two_runs_in_one_second(git_repo: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ids sort by start second, then by their random part: two runs in one second (a fast scripted run,
    a user's quick retry) must still order by start time, or undo and --continue take the older one."""
    ids = iter(["20260101-000000-ffffff", "20260101-000000-000000"])  # the newer one sorts first by name
    monkeypatch.setattr("leaf_cli.repo.lifecycle.new_run_id", lambda: next(ids))
    assert two_turn_run(git_repo, tmp_path, "one", "write one")[0] == 0
    code, second = two_turn_run(git_repo, tmp_path, "two", "--continue", "and two")
    assert code == 0 and "Continuing run 20260101-000000-ffffff" in second
    assert sorted(p.name for p in runs_root().iterdir()) == ["20260101-000000-000000", "20260101-000000-ffffff"]
    undone = leaf("undo", "--workdir", str(git_repo))
    assert undone.exit_code == 0, undone.stderr
    assert "Undid run 20260101-000000-000000" in undone.stderr
    assert (git_repo / "one.txt").read_text() == "one\n" and not (git_repo / "two.txt").exists()


def test_runs_lists_a_header_the_model_and_the_state(git_repo: Path, tmp_path: Path) -> None:
    two_turn_run(git_repo, tmp_path, "one", "write one")
    lines = leaf("runs", "--workdir", str(git_repo)).stdout.splitlines()
    assert lines[0].split("\t") == ["run", "started", "state", "model", "exit", "changes", "task"]
    row = lines[1].split("\t")
    assert row[2] == "kept" and row[3].startswith("replay:") and row[5] == "1 file +1 -0" and row[6] == "write one"


def test_runs_show_gives_the_diff_and_the_conversation(git_repo: Path, tmp_path: Path) -> None:
    two_turn_run(git_repo, tmp_path, "one", "write one")
    run_id = leaf("runs", "--workdir", str(git_repo)).stdout.splitlines()[1].split("\t")[0]
    shown = leaf("runs", "show", run_id[:15])
    assert shown.exit_code == 0, shown.stderr
    out = shown.stdout
    assert f"run        {run_id}" in out and "state      kept" in out
    assert "+++ b/one.txt" in out and "+one" in out  # the diff
    assert "user\nwrite one" in out and "→ Write(one.txt)" in out and "assistant\nwrote one.txt" in out
    missing = leaf("runs", "show", "nope")
    assert missing.exit_code == 2 and "no run called 'nope'" in missing.stderr


def test_review_diff_shows_abbreviated_index_lines() -> None:
    full_a, full_b = "1" * 40, "2" * 40
    patch = (f"diff --git a/x b/x\nindex {full_a}..{full_b} 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    buffer = io.StringIO()
    show_diff(Console(file=buffer, width=120, color_system=None), patch)
    assert f"index {full_a[:9]}..{full_b[:9]} 100644" in buffer.getvalue() and full_a not in buffer.getvalue()
