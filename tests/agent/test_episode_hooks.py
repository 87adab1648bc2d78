"""The episode's hooks travel as one `EpisodeHooks`, and engine failures become endings at the engine boundary."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.agent import EpisodeHooks, Limits, run_episode
from leaf_cli.agent.events import ToolStarted, TurnStarted
from leaf_cli.agent.exits import EpisodeEnd, engine_ending
from leaf_cli.agent.trajectory import load
from leaf_cli.llm.engine import ContextOverflow, EngineError, ReplayExhausted
from leaf_cli.llm.replay import ReplayEngine
from leaf_cli.tools import Workspace


@pytest.mark.parametrize(("error", "reason"), [
    (EngineError("server unreachable"), "engine_error"),
    (ContextOverflow("prompt of 70000 tokens"), "max_context"),
    (ReplayExhausted("script ended"), "replay_exhausted"),
])
def test_engine_ending_names_the_reason_and_keeps_the_message(error: Exception, reason: str) -> None:
    end = engine_ending(error)  # type: ignore[arg-type]
    assert isinstance(end, EpisodeEnd) and end.reason.value == reason and str(end) == str(error)


def test_every_hook_is_used_in_one_episode(git_repo: Path, tmp_path: Path) -> None:
    events: list[object] = []
    turns = [{"tool_calls": [{"name": "Bash", "arguments": {"command": "echo hi"}}]}, {"content": "done"}]
    hooks = EpisodeHooks(on_event=events.append, gate=lambda call: "no shell here", trajectory_path=tmp_path / "t.jsonl",
                         patch_fn=lambda: "diff --git a/x b/x")
    traj = run_episode("task", ReplayEngine(turns), Workspace(git_repo), limits=Limits(max_turns=3), hooks=hooks)
    assert traj.exit_reason == "final_answer" and traj.patch == "diff --git a/x b/x"
    assert traj.messages[3].content == "PermissionError: no shell here"  # the gate refused, the tool never ran
    assert sum(isinstance(e, TurnStarted) for e in events) == 2 and any(isinstance(e, ToolStarted) for e in events)
    assert load(tmp_path / "t.jsonl").exit_reason == "final_answer"


def test_no_hooks_is_the_default(git_repo: Path) -> None:
    traj = run_episode("task", ReplayEngine([{"content": "done"}]), Workspace(git_repo))
    assert traj.exit_reason == "final_answer" and traj.patch == "" and traj.wall_seconds >= 0
