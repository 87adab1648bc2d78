"""The R2E-style tools on real git repositories, driven through run_episode by the replay engine."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from leaf_cli.agent import Limits, run_episode
from leaf_cli.agent.harness import get_harness
from leaf_cli.llm.replay import ReplayEngine
from leaf_cli.tools import Workspace


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def r2e_episode(repo: Path, turns: list[dict[str, Any]], **kwargs: Any):
    harness = get_harness("r2e")
    return run_episode("Fix add() in calc.py.", ReplayEngine(turns), Workspace(repo), **harness.episode_kwargs(), **kwargs)


def observations(traj) -> list[str]:  # noqa: ANN001
    return [m.content for m in traj.messages if m.role == "tool"]


def diff(repo: Path) -> str:
    return subprocess.run(["git", "diff"], cwd=repo, capture_output=True, text=True, check=True).stdout


def test_view_replace_run_and_finish(git_repo: Path) -> None:
    turns = [
        {"tool_calls": [call("file_editor", command="view", path=".")]},
        {"tool_calls": [call("file_editor", command="view", path="calc.py", view_range=[2, -1])]},
        {"tool_calls": [call("search", search_term="add")]},
        {"tool_calls": [call("file_editor", command="str_replace", path="calc.py", old_str="a - b", new_str="a + b")]},
        {"tool_calls": [call("execute_bash", cmd="python -c 'import calc; print(calc.add(2, 3))'")]},
        {"tool_calls": [call("finish", command="submit", result="add() adds now")]},
        {"content": "never reached"},
    ]
    traj = r2e_episode(git_repo, turns)
    assert traj.exit_reason == "final_answer"
    assert traj.tools == ["file_editor", "execute_bash", "search", "finish"]
    listing, view, search, edit, run, finish = observations(traj)
    assert "calc.py" in listing.splitlines()[1:] and "test_calc.py" in listing
    assert view == "[calc.py: lines 2-2 of 2]\n     2\t    return a - b"
    assert search == '"add" occurs 4 times in 2 files under .:\ncalc.py: 1 match\ntest_calc.py: 3 matches'
    assert edit.startswith("Edited calc.py. Lines 1-2 now read:\n     1\tdef add(a, b):\n     2\t    return a + b")
    assert run == "[exit status 0]\n[output]\n5\n\n[errors]\n"
    assert finish == "Submitted. add() adds now"
    assert "-    return a - b\n+    return a + b" in diff(git_repo)


def test_reply_without_a_call_does_not_end_the_episode(git_repo: Path) -> None:
    turns = [{"content": "I think I am done."}, {"content": "Really done."},
             {"tool_calls": [call("finish", command="submit")]}]
    traj = r2e_episode(git_repo, turns)
    assert traj.exit_reason == "final_answer" and traj.assistant_turns() == 3
    reminders = [m.content for m in traj.messages if m.role == "user"][1:]
    assert reminders == ["Call the `finish` tool when you are done."] * 2


def test_never_finishing_runs_to_the_turn_limit(git_repo: Path) -> None:
    turns = [{"content": f"thinking {i}"} for i in range(10)]
    traj = r2e_episode(git_repo, turns, limits=Limits(max_turns=4))
    assert traj.exit_reason == "max_turns" and traj.assistant_turns() == 4


def test_create_insert_and_undo(git_repo: Path) -> None:
    turns = [
        {"tool_calls": [call("file_editor", command="create", path="pkg/util.py", file_text="A = 1\nC = 3\n")]},
        {"tool_calls": [call("file_editor", command="insert", path="pkg/util.py", insert_line=1, new_str="B = 2")]},
        {"tool_calls": [call("file_editor", command="undo_edit", path="pkg/util.py")]},
        {"tool_calls": [call("file_editor", command="create", path="calc.py", file_text="x")]},
        {"tool_calls": [call("file_editor", command="undo_edit", path="pkg/util.py")]},
        {"tool_calls": [call("file_editor", command="undo_edit", path="pkg/util.py")]},
        {"tool_calls": [call("finish")]},
    ]
    traj = r2e_episode(git_repo, turns)
    created, inserted, undo1, exists, undo2, undo3, _ = observations(traj)
    assert created == "Created pkg/util.py (2 lines)."
    assert inserted.startswith("Inserted into pkg/util.py. Lines 1-3 now read:\n     1\tA = 1\n     2\tB = 2\n     3\tC = 3")
    assert undo1 == "Undid the last edit of pkg/util.py; it is back to its previous content."
    assert exists == "FileExistsError: calc.py already exists; change it with str_replace or insert"
    assert undo2 == "Undid the creation of pkg/util.py; the file is gone."
    assert undo3 == "ValueError: no edit of pkg/util.py to undo"
    assert not (git_repo / "pkg" / "util.py").exists()


def test_errors_leave_files_untouched(git_repo: Path) -> None:
    (git_repo / "dup.py").write_text("x = 1\nx = 1\n")
    before = (git_repo / "calc.py").read_text()
    turns = [
        {"tool_calls": [call("file_editor", command="str_replace", path="calc.py", old_str="nope", new_str="y")]},
        {"tool_calls": [call("file_editor", command="str_replace", path="dup.py", old_str="x = 1", new_str="y")]},
        {"tool_calls": [call("file_editor", command="view", path="../outside.py")]},
        {"tool_calls": [call("file_editor", command="view", path="calc.py", view_range=[5, 9])]},
        {"tool_calls": [call("execute_bash", cmd="echo oops >&2; exit 3")]},
        {"tool_calls": [call("search", search_term="zzz_not_here")]},
        {"tool_calls": [call("finish")]},
    ]
    traj = r2e_episode(git_repo, turns)
    missing, twice, outside, past_end, failed, nothing, _ = observations(traj)
    assert missing == "ValueError: old_str does not occur in calc.py; view the file and copy the text exactly"
    assert twice.startswith("ValueError: old_str occurs 2 times in dup.py (lines [1, 2])")
    assert outside.startswith("PermissionError: ")
    assert past_end == "ValueError: view_range [5, 9] is outside calc.py, which has 2 lines"
    assert failed == "[exit status 3]\n[output]\n\n[errors]\noops\n"
    assert nothing == 'No matches for "zzz_not_here" under ..'
    assert (git_repo / "calc.py").read_text() == before and (git_repo / "dup.py").read_text() == "x = 1\nx = 1\n"


def test_search_in_one_file_and_bash_timeout(git_repo: Path) -> None:
    turns = [
        {"tool_calls": [call("search", search_term="return", path="calc.py")]},
        {"tool_calls": [call("execute_bash", cmd="echo started; sleep 20")]},
        {"tool_calls": [call("finish")]},
    ]
    harness = get_harness("r2e")
    workspace = Workspace(git_repo, bash_default_timeout=2.0)
    traj = run_episode("task", ReplayEngine(turns), workspace, **harness.episode_kwargs())
    found, timed_out, _ = observations(traj)
    assert found == '"return" is on 1 lines of calc.py:\n     2\t    return a - b'
    assert timed_out == "[command timed out after 2s; output so far]\n[output]\nstarted\n\n[errors]\n"
