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
    Qwen3.5 template's rendering of the saved conversation, tokenized once; nothing of the conversation is reused from before."""
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
    # A fresh engine holds nothing of the conversation: at most the system turn, which the persistent prefix
    # cache (llm/prefix_cache.py) keeps across processes; that is shorter than the first run's first prompt.
    assert turn["cached_tokens"] < first["usage"]["turns"][0]["prompt_tokens"] < turn["prompt_tokens"]
    traj = load(Path(second["trajectory"]))
    engine = LlamaCppEngine(tiny_qwen35_gguf, n_ctx=512)
    reloaded = traj.messages[:len(first["messages"]) + 1]
    expected = engine.template.render_messages(reloaded, tool_schemas(TOOLS), True, True)
    assert traj.token_log.ids[:turn["prompt_tokens"]] == engine._tokenize(expected)


THINK_CLOSE = 248069  # `</think>` in the Qwen3.5 vocabulary (the fixture keeps the real ids)


def test_fix_constrain_tools_as_a_subprocess_holds_the_grammar(git_repo: Path, tiny_qwen35_gguf: Path,
                                                               tmp_path: Path) -> None:
    """The real `leaf fix --constrain-tools` process on FrogNano's architecture, with short replies from
    `--max-tokens`. Whatever the random weights write: every reply the model ended itself is one the Qwen3-Coder
    XML grammar accepts (a call of one of the five tools, or plain text as the final answer), the thinking budget
    closed each reasoning, no reply went past the cap, and the run is recorded and undone."""
    import json
    import subprocess
    import sys

    from leaf_cli.agent.exits import ExitReason
    from leaf_cli.llm.llama_runtime import load_llama
    from leaf_cli.llm.parse import parse_reply
    from leaf_cli.tools import TOOLS, tool_schemas

    budget, cap = 16, 96
    before = (git_repo / "calc.py").read_bytes()
    args = [sys.executable, "-m", "leaf_cli", "fix", "--model", str(tiny_qwen35_gguf), "--constrain-tools",
            "--max-tokens", str(cap), "--thinking-budget", str(budget), "--json", "--yes", "--max-turns", "3",
            "--n-ctx", "4096", "--temperature", "0.7", "--seed", "1", "Fix add in calc.py so the test passes."]
    done = subprocess.run(args, cwd=git_repo, capture_output=True, timeout=240)
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1, (done.stdout, done.stderr[-2000:])
    out = json.loads(lines[0])
    assert out["exit_reason"] in {r.value for r in ExitReason} and done.returncode == (out["exit_reason"] != "final_answer")
    traj = load(Path(out["trajectory"]))
    assert traj.token_log is not None and traj.turns
    llm, _info = load_llama(tiny_qwen35_gguf, n_ctx=256)
    schemas = tool_schemas(TOOLS)
    names = {s["function"]["name"] for s in schemas}
    for turn in traj.turns:
        start, count = turn.usage.prompt_tokens, turn.usage.completion_tokens
        assert count is not None and 0 < count <= cap
        ids = traj.token_log.ids[start:start + count]
        assert len(ids) == count
        # The budget writes "\n</think>\n\n" after `budget` reasoning tokens: `</think>` is at index budget+1 at most.
        assert THINK_CLOSE in ids[:budget + 2] or (turn.finish_reason == "length" and count <= budget + 1), ids
        raw = llm.detokenize(ids, special=True).decode("utf-8", errors="replace")
        after = raw.split("</think>", 1)[-1]
        if "<" in after.rstrip("<|im_end|>"):  # a call has begun: the grammar allows nothing else after `</think>`
            call = after[after.index("<"):]
            head = "<tool_call>\n<function="
            assert call.startswith(head) or head.startswith(call), raw
        if turn.finish_reason == "stop":
            parsed = parse_reply(raw.removesuffix("<|im_end|>"), schemas, in_reasoning=True)
            assert parsed.parse_error is None, raw
            assert all(c.name in names for c in parsed.tool_calls)
            assert parsed.tool_calls or turn is traj.turns[-1], raw  # plain text ends the run as its answer
    assert out["usage"]["completion_tokens"] == sum(t.usage.completion_tokens for t in traj.turns)
    if traj.turns[-1].finish_reason == "length":  # cut by --max-tokens, not by the context
        assert out["exit_reason"] == "max_tokens" and f"reply cut at {cap} tokens" in traj.exit_message
    env_run = {"cwd": git_repo, "capture_output": True, "timeout": 60}
    listed = subprocess.run([sys.executable, "-m", "leaf_cli", "runs"], **env_run)
    assert listed.returncode == 0 and out["run_id"][:8] in listed.stdout.decode()
    undone = subprocess.run([sys.executable, "-m", "leaf_cli", "undo", "--force"], **env_run)
    assert undone.returncode == 0, undone.stderr
    assert (git_repo / "calc.py").read_bytes() == before
