"""Every exit reason of run_episode, driven by the replay engine on real git repositories."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from leaf_cli.agent import EpisodeHooks, Limits, run_episode
from leaf_cli.agent.trajectory import load
from leaf_cli.llm.engine import EngineError, Sampling
from leaf_cli.llm.messages import AssistantTurn, Conversation
from leaf_cli.llm.replay import ReplayEngine
from leaf_cli.tools import Workspace


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def episode(repo: Path, turns: list[dict[str, Any]], **kwargs: Any):
    return run_episode("Fix add() in calc.py.", ReplayEngine(turns), Workspace(repo), **kwargs)


def test_final_answer_after_tool_calls(git_repo: Path, tmp_path: Path) -> None:
    turns = [
        {"reasoning_content": "look first", "tool_calls": [call("Read", file_path="calc.py")]},
        {"tool_calls": [call("edit", file_path="calc.py", old_string="a - b", new_string="a + b")]},
        {"content": "Fixed: add() now adds."},
    ]
    traj = episode(git_repo, turns, hooks=EpisodeHooks(trajectory_path=tmp_path / "t.jsonl"))
    assert traj.exit_reason == "final_answer"
    assert (git_repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    roles = [m.role for m in traj.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert traj.messages[3].content.splitlines()[:2] == ["calc.py", "1. def add(a, b):"]
    assert traj.messages[5].content == "Edited calc.py (1 replacement)."
    assert traj.final_answer() == "Fixed: add() now adds."
    assert load(tmp_path / "t.jsonl").model_dump() == traj.model_dump()


def test_unknown_tool_and_refused_call_are_observations(git_repo: Path) -> None:
    turns = [{"tool_calls": [call("Delete", path="x"), call("Bash", command="git push")]}, {"content": "done"}]
    refuse_bash = EpisodeHooks(gate=lambda c: "git push is not allowed" if c.name == "Bash" else None)
    traj = episode(git_repo, turns, hooks=refuse_bash)
    assert [m.content for m in traj.messages if m.role == "tool"] == [
        "Unknown tool: Delete", "PermissionError: git push is not allowed"]
    assert traj.exit_reason == "final_answer"


def test_max_tokens_when_the_reply_is_cut(git_repo: Path) -> None:
    traj = episode(git_repo, [{"content": "I will now", "finish_reason": "length"}])
    assert traj.exit_reason == "max_tokens"


def test_max_turns(git_repo: Path) -> None:
    turns = [{"tool_calls": [call("Glob", pattern=f"*{i}*")]} for i in range(5)]
    traj = episode(git_repo, turns, limits=Limits(max_turns=3))
    assert traj.exit_reason == "max_turns"
    assert traj.assistant_turns() == 3


def test_max_context_from_reported_usage(git_repo: Path) -> None:
    turns = [{"tool_calls": [call("Glob", pattern="*.py")], "usage": {"prompt_tokens": 900, "completion_tokens": 200}}]
    traj = episode(git_repo, turns, limits=Limits(max_context=1000))
    assert traj.exit_reason == "max_context"


def test_max_time(git_repo: Path) -> None:
    turns = [{"tool_calls": [call("Bash", command="sleep 0.4")]}, {"content": "never reached"}]
    traj = episode(git_repo, turns, limits=Limits(max_seconds=0.2))
    assert traj.exit_reason == "max_time"
    assert traj.assistant_turns() == 1


def test_loop_after_five_identical_calls(git_repo: Path) -> None:
    turns = [{"tool_calls": [call("Read", file_path="calc.py")]}] * 6
    traj = episode(git_repo, turns, limits=Limits.with_safeguards())
    assert traj.exit_reason == "loop"
    assert sum(1 for m in traj.messages if m.role == "tool") == 4


def test_different_calls_reset_the_loop_count(git_repo: Path) -> None:
    same = {"tool_calls": [call("Read", file_path="calc.py")]}
    other = {"tool_calls": [call("Glob", pattern="*.py")]}
    traj = episode(git_repo, [same] * 4 + [other] + [same] * 4 + [{"content": "ok"}], limits=Limits.with_safeguards())
    assert traj.exit_reason == "final_answer"


def test_replay_exhausted(git_repo: Path) -> None:
    traj = episode(git_repo, [{"tool_calls": [call("Glob", pattern="*.py")]}])
    assert traj.exit_reason == "replay_exhausted"


def test_format_error_after_three_unparseable_calls(git_repo: Path) -> None:
    broken = {"content": '<tool_call>\n{"name": "Read", "arguments": {"file_path": \n</tool_call>'}
    traj = episode(git_repo, [broken] * 3, limits=Limits.with_safeguards())
    assert traj.exit_reason == "format_error"
    nudges = [m for m in traj.messages if m.role == "user"][1:]
    assert len(nudges) == 2 and all(m.content.startswith("Format error:") for m in nudges)


def test_a_good_call_resets_the_format_error_count(git_repo: Path) -> None:
    broken = {"content": "<tool_call>\n<function=Read>\n<parameter=file_path>"}
    good = {"tool_calls": [call("Glob", pattern="*.py")]}
    traj = episode(git_repo, [broken, broken, good, broken, broken, {"content": "done"}], limits=Limits.with_safeguards())
    assert traj.exit_reason == "final_answer"


class _FailingEngine:
    name, context_limit = "failing", 4096

    def complete(self, conversation: Conversation, tools: list, sampling: Sampling, on_delta=None) -> AssistantTurn:
        raise EngineError("connection refused")


def test_engine_error(git_repo: Path) -> None:
    traj = run_episode("task", _FailingEngine(), Workspace(git_repo))
    assert traj.exit_reason == "engine_error"
    assert "connection refused" in traj.exit_message


def test_interrupt_kills_the_running_tool_and_saves_the_trajectory(git_repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "survivor"
    script = f"(sleep 3; touch {marker}) & sleep 30"
    previous = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    # A clean HOME: killing `bash -l` while it runs the developer's profile can leave pyenv's rehash lock behind.
    home = tmp_path / "home"
    home.mkdir()
    workspace = Workspace(git_repo, env={**os.environ, "HOME": str(home)})
    try:
        began = time.monotonic()
        traj = run_episode("task", ReplayEngine([{"tool_calls": [call("Bash", command=script)]}]), workspace,
                           hooks=EpisodeHooks(trajectory_path=tmp_path / "t.jsonl"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert traj.exit_reason == "interrupted"
    assert time.monotonic() - began < 10
    assert load(tmp_path / "t.jsonl").exit_reason == "interrupted"
    time.sleep(3.5)
    assert not marker.exists(), "the tool's background child survived the interrupt"


def test_continuing_a_conversation_appends_the_follow_up(git_repo: Path) -> None:
    first = episode(git_repo, [{"content": "first answer"}])
    conv = Conversation(messages=first.messages)
    second = run_episode("and now?", ReplayEngine([{"content": "second answer"}]), Workspace(git_repo), conversation=conv)
    assert [m.content for m in second.messages if m.role == "user"] == ["Fix add() in calc.py.", "and now?"]
    assert second.final_answer() == "second answer"


def test_patch_fn_runs_even_when_the_episode_fails(git_repo: Path) -> None:
    traj = run_episode("task", _FailingEngine(), Workspace(git_repo),
                       hooks=EpisodeHooks(patch_fn=lambda: "diff --git a b"))
    assert traj.patch == "diff --git a b"


def test_usage_lists_each_turn_with_totals(git_repo: Path) -> None:
    turns = [
        {"tool_calls": [call("Glob", pattern="*.py")], "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
        {"content": "done", "usage": {"prompt_tokens": 130, "cached_tokens": 110, "completion_tokens": 5}},
    ]
    usage = episode(git_repo, turns).usage()
    assert usage["turns"] == [
        {"prompt_tokens": 100, "cached_tokens": 0, "completion_tokens": 10},
        {"prompt_tokens": 130, "cached_tokens": 110, "completion_tokens": 5},
    ]
    assert (usage["prompt_tokens"], usage["cached_tokens"], usage["completion_tokens"]) == (230, 110, 15)
