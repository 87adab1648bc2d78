"""Harness profiles: same loop, different tools/prompt/finish rule; the turn-limit share for summary.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.agent import run_episode
from leaf_cli.agent.harness import HARNESSES, get_harness, turn_limit_summary
from leaf_cli.agent.prompt import SYSTEM_PROMPT
from leaf_cli.errors import LeafError
from leaf_cli.llm.replay import ReplayEngine
from leaf_cli.tasks.runner.results import AttemptResult
from leaf_cli.tools import TOOLS, Workspace


def test_profiles_resolve() -> None:
    leaf, r2e = get_harness(None), get_harness("R2E")
    assert leaf.tools == TOOLS and leaf.system_prompt == SYSTEM_PROMPT and leaf.final_tool is None
    assert [t.name for t in r2e.tools] == ["file_editor", "execute_bash", "search", "finish"]
    assert r2e.final_tool == "finish" and "finish" in r2e.system_prompt
    assert set(HARNESSES) == {"leaf", "r2e"}
    with pytest.raises(LeafError, match="choose one of: leaf, r2e"):
        get_harness("swe-agent")


def test_same_script_ends_differently_per_harness(git_repo: Path) -> None:
    """A plain reply is the final answer under leaf; under r2e it only earns a reminder."""
    script = [{"content": "Looks fine to me."}]
    leaf = run_episode("task", ReplayEngine(script), Workspace(git_repo), **get_harness("leaf").episode_kwargs())
    r2e = run_episode("task", ReplayEngine(script), Workspace(git_repo), **get_harness("r2e").episode_kwargs())
    assert leaf.exit_reason == "final_answer"
    assert r2e.exit_reason == "replay_exhausted"
    assert r2e.messages[0].content == get_harness("r2e").system_prompt


def test_turn_limit_summary_from_results() -> None:
    rows = [
        {"exit_reason": "max_turns"}, {"exit_reason": "max_turns"}, {"exit_reason": "final_answer"},
        {"exit_reason": None},  # the agent never ran (infrastructure): not an episode
        AttemptResult(instance_id="a", attempt=1, repo="r", model="m", resolved=False, patch_applied="empty",
                      exit_reason="max_turns"),
    ]
    assert turn_limit_summary(rows) == {"episodes": 4, "turn_limit": 3, "turn_limit_share": 0.75}
    assert turn_limit_summary([]) == {"episodes": 0, "turn_limit": 0, "turn_limit_share": None}
