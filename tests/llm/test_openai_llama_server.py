"""The OpenAI engine against a real `python -m llama_cpp.server` on loopback, serving the SmolLM2 GGUF.

One server for the session, two aliases of the same file: `smollm2` (the GGUF's own ChatML template; text
only) and `smollm2-fc` (llama-cpp-python's `chatml-function-calling` format, which returns structured
`tool_calls`); and `qwen35`, the tiny Qwen3.5 fixture with the real Qwen3.5 chat template.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from leaf_cli.llm.engine import ContextOverflow, EngineError, Sampling
from leaf_cli.llm.messages import Conversation, Message, ToolCall
from leaf_cli.llm.openai import OpenAIEngine

pytestmark = pytest.mark.llama

READ_TOOL = {"type": "function", "function": {"name": "Read", "description": "Read a file from disk.",
             "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}},
                            "required": ["file_path"]}}}
GREEDY = Sampling(temperature=0.0, max_tokens=8, enable_thinking=False)
SERVER_DEPS = ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(smollm2_path: Path, tiny_qwen35_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    missing = [m for m in SERVER_DEPS if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"llama-cpp-python's server extra is missing: {', '.join(missing)}")
    port = _free_port()
    model = {"model": str(smollm2_path), "n_ctx": 1024, "verbose": False, "n_threads": 2}
    config = {"host": "127.0.0.1", "port": port, "models": [
        {**model, "model_alias": "smollm2"},
        {**model, "model_alias": "smollm2-fc", "chat_format": "chatml-function-calling"},
        {**model, "model": str(tiny_qwen35_gguf), "model_alias": "qwen35", "n_ctx": 4096}]}  # its own template
    folder = tmp_path_factory.mktemp("llama-server")
    (folder / "config.json").write_text(json.dumps(config))
    log = (folder / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--config_file", str(folder / "config.json")],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                log_text = (folder / "server.log").read_text()[-2000:]
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {log_text}")
            try:
                if httpx.get(url + "/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not start within 120 s")
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def ask(text: str) -> Conversation:
    return Conversation(messages=[Message(role="system", content="You are a helpful assistant."),
                                  Message(role="user", content=text)])


def test_streams_content_deltas_from_a_real_server(llama_server: str) -> None:
    deltas: list[tuple[str, str]] = []
    engine = OpenAIEngine(llama_server, "smollm2")
    turn = engine.complete(ask("Say hello."), [], GREEDY, on_delta=lambda k, t: deltas.append((k, t)))
    assert turn.content and "".join(t for k, t in deltas if k == "content") == turn.raw_text
    assert len(deltas) > 1  # it really streamed, token by token
    assert turn.finish_reason in ("stop", "length") and turn.tool_calls == []


def test_structured_tool_call_from_a_real_server(llama_server: str) -> None:
    # chatml-function-calling refuses to stream an automatic tool choice (HTTP 400): the engine resends unstreamed.
    engine = OpenAIEngine(llama_server, "smollm2-fc")
    turn = engine.complete(ask("Read the file a.py"), [READ_TOOL], Sampling(temperature=0.0, max_tokens=48))
    assert [c.name for c in turn.tool_calls] == ["Read"]
    assert isinstance(turn.tool_calls[0].arguments.get("file_path"), str)
    assert turn.usage.prompt_tokens > 0 and turn.usage.completion_tokens > 0
    assert engine.stream is True  # the fallback is per request, not a changed engine setting


def test_history_with_reasoning_and_tool_results_is_accepted(llama_server: str) -> None:
    convo = ask("What is in a.py?")
    convo.append(Message(role="assistant", content="", reasoning_content="Read it first.",
                         tool_calls=[ToolCall(id="call_1", name="Read", arguments={"file_path": "a.py"})]))
    convo.append(Message(role="tool", content="a.py\n1. x = 1", tool_call_id="call_1", name="Read"))
    engine = OpenAIEngine(llama_server, "smollm2", stream=False)
    first = engine.complete(ask("What is in a.py?"), [READ_TOOL], GREEDY)
    turn = engine.complete(convo, [READ_TOOL], GREEDY)
    assert turn.usage.prompt_tokens > first.usage.prompt_tokens > 0


def test_context_length_rejection_is_context_overflow(llama_server: str) -> None:
    engine = OpenAIEngine(llama_server, "smollm2")
    with pytest.raises(ContextOverflow, match="maximum context length is 1024"):
        engine.complete(ask("word " * 1500), [], GREEDY)


def test_qwen35_template_served_by_llama_cpp_server(llama_server: str) -> None:
    """The first turn works; once the history holds a tool call the server's Jinja lacks `from_json` (the
    Qwen3.5 template applies it to string arguments) and leaf reports that error, at once, not "cannot reach"."""
    attempts: list[float] = []
    engine = OpenAIEngine(llama_server, "qwen35", sleep=attempts.append)
    first = engine.complete(ask("What is in a.py?"), [READ_TOOL], GREEDY)
    assert first.raw_text and first.finish_reason in ("stop", "length")
    convo = ask("What is in a.py?")
    convo.append(Message(role="assistant", content="", reasoning_content="Read it.",
                         tool_calls=[ToolCall(id="call_1", name="Read", arguments={"file_path": "a.py"})]))
    convo.append(Message(role="tool", content="a.py\n1. x = 1", tool_call_id="call_1", name="Read"))
    with pytest.raises(EngineError) as failed:
        engine.complete(convo, [READ_TOOL], GREEDY)
    message = str(failed.value)
    assert "from_json" in message and "chat template" in message and "cannot reach" not in message
    assert len(attempts) <= 1  # at most one reconnect after the server dropped the failed stream; no 500 retries


def test_qwen35_reply_after_the_opened_think_is_split(llama_server: str, tiny_qwen35_gguf: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With thinking on, the served Qwen3.5 template opens `<think>` and llama_cpp.server (no reasoning parser)
    sends `…</think>…` as content. The tiny model's weights are random, so a logit bias makes it write
    `</think>` then stop. This checks the premise on the real server (the close tag arrives as content, no
    `reasoning_content`); the canned replies in test_openai.py are the ones old code fails."""
    import llama_cpp

    vocab = llama_cpp.Llama(str(tiny_qwen35_gguf), vocab_only=True, verbose=False)
    close = vocab.tokenize(b"</think>", add_bos=False, special=True)
    assert len(close) == 1
    engine = OpenAIEngine(llama_server, "qwen35", stream=False)
    body = engine._body
    monkeypatch.setattr(engine, "_body", lambda *a: {**body(*a), "logit_bias": {str(close[0]): 100}})
    turn = engine.complete(ask("Hi"), [], Sampling(temperature=0.0, max_tokens=1, enable_thinking=True))
    assert turn.raw_text == "</think>"  # the real server's content: the close tag, no reasoning_content
    assert turn.reasoning == "" and turn.content == "" and turn.tool_calls == []
