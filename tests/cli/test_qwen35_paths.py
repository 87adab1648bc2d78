"""`leaf chat` on FrogNano's own architecture: the tiny random-weight Qwen3.5 GGUF (hybrid, the real Qwen3.5
template, Qwen3-Coder XML calls).

The SmolLM2 versions of these tests prove the loop mechanics on an attention model with a ChatML template;
here the template drops earlier reasoning at each user message and llama.cpp cannot cut the recurrent state,
which is where the canonical re-render and the saved states matter.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.agent.trajectory import load
from leaf_cli.llm.engine import Sampling
from leaf_cli.repo.runs import list_runs

pytestmark = pytest.mark.llama


def test_chat_follow_up_is_the_templates_rendering_from_a_checkpoint(git_repo: Path, tiny_qwen35_gguf: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from leaf_cli.cli import fix_session
    from leaf_cli.cli.chat import ChatSession
    from leaf_cli.cli.fix_session import make_engine_for
    from leaf_cli.config import load_settings
    from leaf_cli.tools import TOOLS, tool_schemas

    settings, _ = load_settings({"model": str(tiny_qwen35_gguf), "max_turns": 1, "quiet": True, "n_ctx": 8192,
                                 "temperature": 0.0}, git_repo)
    engine = make_engine_for(settings)
    # Random weights rarely write an end token: short greedy replies keep the test in seconds.
    monkeypatch.setattr(fix_session, "sampling_for_model", lambda _s: Sampling(temperature=0.0, max_tokens=16))
    session = ChatSession(git_repo, git_repo, settings, engine, yes=True)
    session.send("Say hello.")
    session.send("Now say goodbye.")
    run = list_runs(git_repo)[0]
    first, second = (load(Path(run.trajectory).with_name(f"chat-00{i}.jsonl")) for i in (1, 2))
    now = second.turns[0].usage
    prompt = second.token_log.ids[:now.prompt_tokens]
    canonical = engine.template.render_messages(second.messages[:len(first.messages) + 1], tool_schemas(TOOLS),
                                                True, True)
    assert prompt == engine._tokenize(canonical)  # what the template renders, earlier reasoning dropped
    assert 0 < now.cached_tokens < now.prompt_tokens
    assert engine.last_evaluated < now.prompt_tokens // 2  # from a checkpoint, not the whole conversation


def test_fix_then_continue_renders_the_saved_conversation_canonically(git_repo: Path, tiny_qwen35_gguf: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`leaf fix`, then `leaf fix --continue` with a fresh engine (as a new process has): its first prompt is the
    Qwen3.5 template's rendering of the saved conversation, tokenized once; nothing is reused from before."""
    from leaf_cli.cli import fix_session
    from leaf_cli.llm.llamacpp import LlamaCppEngine
    from leaf_cli.tools import TOOLS, tool_schemas
    from tests.cli.fixcli import fix_json

    monkeypatch.setattr(fix_session, "sampling_for_model", lambda _s: Sampling(temperature=0.0, max_tokens=16))
    options = ("--yes", "--n-ctx", "8192", "--max-turns", "1")
    _code, first = fix_json(git_repo, str(tiny_qwen35_gguf), *options, "Look at calc.py.")
    _code, second = fix_json(git_repo, str(tiny_qwen35_gguf), *options, "--continue", "Now run the tests.")
    assert second["messages"][:len(first["messages"])] == first["messages"]
    turn = second["usage"]["turns"][0]
    assert turn["cached_tokens"] == 0  # a fresh engine holds nothing
    traj = load(Path(second["trajectory"]))
    engine = LlamaCppEngine(tiny_qwen35_gguf, n_ctx=512)
    reloaded = traj.messages[:len(first["messages"]) + 1]
    expected = engine.template.render_messages(reloaded, tool_schemas(TOOLS), True, True)
    assert traj.token_log.ids[:turn["prompt_tokens"]] == engine._tokenize(expected)
