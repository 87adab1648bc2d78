"""The loop cases of FrogNano's `tests/test_leaf.py`, ported to `run_episode` (its names in the docstrings).

Its exit names map to leaf's: agent → final_answer, max_tokens_per_turn → max_tokens, max_context_len →
max_context, llm_query_error → engine_error. The engine is the replay engine (scripted turns, real tools in
a real git repository); context rejections come from the OpenAI engine against a loopback HTTP server.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from leaf_cli.agent import EpisodeHooks, Limits, run_episode
from leaf_cli.llm.engine import EngineError, Sampling
from leaf_cli.llm.messages import AssistantTurn, Conversation
from leaf_cli.llm.replay import ReplayEngine
from leaf_cli.tools import Workspace


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def run(repo: Path, turns: list[Any], limits: Limits | None = None, sampling: Sampling | None = None, **kw: Any):
    return run_episode("Fix the failing test.", ReplayEngine(turns), Workspace(repo, confined=False),
                       limits=limits or Limits(max_turns=4), sampling=sampling, **kw)


def test_executes_tools_and_returns_patch(git_repo: Path) -> None:
    """test_leaf_executes_tools_and_returns_patch"""
    traj = run(git_repo, [{"tool_calls": [call("Read", file_path="calc.py")]}, {"content": "Done."}],
               hooks=EpisodeHooks(patch_fn=lambda: "diff --git a/calc.py b/calc.py"))
    assert traj.exit_reason == "final_answer" and traj.final_answer() == "Done."
    assert traj.patch.startswith("diff --git") and traj.messages[-1].content == "Done."
    assert len(traj.turns) == 2 and traj.messages[3].content.startswith("calc.py\n1. ")


class Failing:
    name, context_limit = "failing", 65536

    def __init__(self, error: Exception) -> None:
        self.error = error

    def complete(self, *args: Any, **kwargs: Any) -> AssistantTurn:
        raise self.error


@pytest.mark.parametrize("message", ["model unavailable", "No available workers", "invalid context length parameter",
                                     "rate limit exceeded"])
def test_records_query_failures(git_repo: Path, message: str) -> None:
    """test_leaf_records_query_failures"""
    traj = run_episode("t", Failing(EngineError(message)), Workspace(git_repo), limits=Limits())
    assert traj.exit_reason == "engine_error" and message in traj.exit_message


@pytest.mark.parametrize("message", ["CONTEXT_LENGTH_EXCEEDED", "Please reduce the length of the messages",
                                     "This model's maximum context length is 131072 tokens",
                                     "Input context length exceeds the model limit"])
def test_preserves_work_on_context_rejection(git_repo: Path, message: str) -> None:
    """test_leaf_preserves_work_on_context_rejection: the server's refusal ends as max_context, work kept."""
    from tests.llm.test_openai import Scripted, completion
    import threading

    from leaf_cli.llm.openai import OpenAIEngine

    server = Scripted()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        write = {"id": "c1", "type": "function", "function": {"name": "Write", "arguments": json.dumps(
            {"file_path": "file.py", "content": "fix"})}}
        server.replies += [{"json": completion({"content": "", "tool_calls": [write]}, "tool_calls")},
                           {"status": 400, "json": {"error": {"message": message}}}]
        traj = run_episode("t", OpenAIEngine(server.url, "m", stream=False), Workspace(git_repo),
                           limits=Limits())
    finally:
        server.shutdown()
        server.server_close()
    assert traj.exit_reason == "max_context"
    assert (git_repo / "file.py").read_text() == "fix"
    assert traj.messages[-1].role == "tool" and len(traj.turns) == 1


def test_empty_tool_free_response_is_the_final_answer(git_repo: Path) -> None:
    """test_leaf_treats_empty_tool_free_response_as_agent_finish"""
    traj = run(git_repo, [{"content": ""}])
    assert traj.exit_reason == "final_answer" and traj.final_answer() == ""
    assert traj.messages[-1].role == "assistant" and traj.messages[-1].content == ""


def test_reasoning_is_kept_in_the_message(git_repo: Path) -> None:
    """test_leaf_whitelists_assistant_message_fields"""
    traj = run(git_repo, [{"content": "Done.", "reasoning_content": "private reasoning"}])
    assert traj.messages[-1].to_openai() == {"role": "assistant", "content": "Done.",
                                             "reasoning_content": "private reasoning"}


def test_truncated_turn_is_classified_without_executing_tools(git_repo: Path) -> None:
    """test_leaf_classifies_truncated_turn_without_executing_tools"""
    turns = [{"content": "partial", "tool_calls": [call("Write", file_path="x.py", content="1")],
              "finish_reason": "length", "usage": {"prompt_tokens": 10, "completion_tokens": 20}}]
    traj = run(git_repo, turns, sampling=Sampling(max_tokens=20))
    assert traj.exit_reason == "max_tokens" and not (git_repo / "x.py").exists()
    assert [m.role for m in traj.messages] == ["system", "user", "assistant"]


def test_context_clamped_truncated_turn(git_repo: Path) -> None:
    """test_leaf_classifies_context_clamped_truncated_turn"""
    turns = [{"content": "partial", "finish_reason": "length", "usage": {"prompt_tokens": 10, "completion_tokens": 20}}]
    assert run(git_repo, turns, Limits(max_context=30), Sampling(max_tokens=20)).exit_reason == "max_context"
    # A cut well short of the cap (the server clamped it): the context filled, as the harness reads it.
    turns[0]["usage"] = {"prompt_tokens": 10, "completion_tokens": 5}
    assert run(git_repo, turns, Limits(max_context=100), Sampling(max_tokens=20)).exit_reason == "max_context"


def test_malformed_tool_arguments_become_an_observation(git_repo: Path) -> None:
    """test_leaf_turns_malformed_tool_arguments_into_tool_observation"""
    turns = [{"tool_calls": [{"id": "c1", "function": {"name": "Read", "arguments": "{"}}]}, {"content": "Done."}]
    traj = run(git_repo, turns)
    assert traj.exit_reason == "final_answer"
    assert traj.messages[3].content == "ValueError: file_path is required"


def test_context_accounting_includes_tool_observations(git_repo: Path) -> None:
    """test_leaf_context_accounting_includes_tool_observations: 10 tokens reported, the Read's result adds more."""
    turns = [{"tool_calls": [call("Read", file_path="calc.py")], "usage": {"prompt_tokens": 6, "completion_tokens": 4}}]
    traj = run(git_repo, turns, Limits(max_context=11))
    assert traj.exit_reason == "max_context" and "calc.py\n1. " in traj.messages[-1].content


def test_context_limit_counts_with_greater_or_equal(git_repo: Path) -> None:
    """test_leaf_stops_at_context_limit, and the `>=` of the harness at the boundary."""
    observation = "No files matched."
    added = math.ceil(len(json.dumps([{"role": "tool", "tool_call_id": "call_1_0", "content": observation}],
                                     separators=(",", ":")).encode()) / 4)
    turn = {"tool_calls": [call("Glob", pattern="*.nothing")], "usage": {"prompt_tokens": 90, "completion_tokens": 10}}
    assert run(git_repo, [turn], Limits(max_context=50)).exit_reason == "max_context"
    assert run(git_repo, [turn], Limits(max_context=100 + added)).exit_reason == "max_context"
    assert run(git_repo, [turn, {"content": "ok"}], Limits(max_context=101 + added)).exit_reason == "final_answer"


def test_without_usage_the_whole_conversation_is_counted(git_repo: Path) -> None:
    """The harness's fallback when the server reports no usage: count every message (here, 4 bytes a token)."""
    turns = [{"tool_calls": [call("Read", file_path="calc.py")]}, {"content": "ok"}]
    assert run(git_repo, turns, Limits(max_context=60)).exit_reason == "max_context"
    assert run(git_repo, turns, Limits(max_context=100_000)).exit_reason == "final_answer"


def test_a_reply_without_calls_ends_even_past_the_context_limit(git_repo: Path) -> None:
    turns = [{"content": "done", "usage": {"prompt_tokens": 500, "completion_tokens": 600}}]
    assert run(git_repo, turns, Limits(max_context=1000)).exit_reason == "final_answer"


def test_safeguards_off_reproduce_frognanos_loop(git_repo: Path) -> None:
    # An unparseable call: FrogNano's server left the text as content and the harness ended the episode.
    traj = run(git_repo, [{"content": "<tool_call>\n</tool_call>"}])
    assert traj.exit_reason == "final_answer" and [m.role for m in traj.messages] == ["system", "user", "assistant"]
    # The same call six times: no `loop` exit.
    same = [{"tool_calls": [call("Glob", pattern="*.py")]}] * 6 + [{"content": "ok"}]
    assert run(git_repo, same, Limits(max_turns=10)).exit_reason == "final_answer"


def test_safeguards_on_for_leaf_fix(git_repo: Path) -> None:
    broken = {"content": "<tool_call>\n</tool_call>"}
    traj = run(git_repo, [broken, broken, broken], Limits.with_safeguards())
    assert traj.exit_reason == "format_error"
    assert [m.role for m in traj.messages].count("user") == 3  # the task and two format-error messages
    quiet = run(git_repo, [broken, broken, broken], Limits.with_safeguards(format_error_message=False))
    assert quiet.exit_reason == "format_error" and [m.role for m in quiet.messages].count("user") == 1
    same = [{"tool_calls": [call("Glob", pattern="*.py")]}] * 6
    assert run(git_repo, same, Limits.with_safeguards()).exit_reason == "loop"
