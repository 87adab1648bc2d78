"""The OpenAI-compatible engine against a small real HTTP server on loopback that plays scripted replies.

The replies imitate what llama-server and vLLM send (JSON and server-sent events); the same engine runs against
a real `llama_cpp.server` in test_openai_llama_server.py.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

from leaf_cli.llm.engine import ContextOverflow, EngineError, Sampling
from leaf_cli.llm.messages import Conversation, Message, ToolCall
from leaf_cli.llm.openai import OpenAIEngine, chat_url

READ_TOOL = {"type": "function", "function": {"name": "Read", "description": "Read a file.", "parameters": {
    "type": "object", "properties": {"file_path": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["file_path"]}}}


class Scripted(ThreadingHTTPServer):
    """Answers each POST with the next scripted reply and records every request body."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.daemon_threads = True
        self.replies: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Scripted

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": [{"id": "served-model", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        self.server.headers_seen.append(dict(self.headers))
        reply = self.server.replies.pop(0)
        if "events" in reply:
            self._stream(reply["events"], reply.get("cut", False))
        else:
            self._send(reply.get("status", 200), reply["json"], reply.get("headers", {}))

    def _send(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)

    def _stream(self, events: list[Any], cut: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in events:
            payload = event if isinstance(event, str) else f"data: {json.dumps(event)}\n\n"
            chunk = payload.encode()
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
        if cut:  # drop the connection without the terminating chunk
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")


@pytest.fixture
def server() -> Iterator[Scripted]:
    srv = Scripted()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def conversation() -> Conversation:
    return Conversation(messages=[Message(role="system", content="You are terse."),
                                  Message(role="user", content="Read a.py")])


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def completion(message: dict[str, Any], finish: str = "stop", usage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", **message},
                                                      "finish_reason": finish}], "usage": usage or {}}


def test_chat_url_accepts_host_or_v1_base() -> None:
    assert chat_url("http://h:8000") == "http://h:8000/v1/chat/completions"
    assert chat_url("http://h:8000/v1/") == "http://h:8000/v1/chat/completions"
    assert chat_url("https://api.example.com/openai/v1") == "https://api.example.com/openai/v1/chat/completions"
    with pytest.raises(EngineError, match="http"):
        chat_url("localhost:8000")


def test_streamed_reasoning_content_and_tool_call_deltas_are_assembled(server: Scripted) -> None:
    server.replies.append({"events": [
        chunk({"role": "assistant"}),
        chunk({"reasoning_content": "Need to "}), chunk({"reasoning_content": "look."}),
        chunk({"content": "Reading."}),
        chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                               "function": {"name": "Read", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"file_pa"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "th\": \"a.py\"}"}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_b",
                               "function": {"name": "Glob", "arguments": "{\"pattern\":"}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": " \"*.py\"}"}}]}),
        chunk({}, finish="tool_calls"),
        {"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 30,
                                  "prompt_tokens_details": {"cached_tokens": 96}}},
        "data: [DONE]\n\n",
    ]})
    deltas: list[tuple[str, str]] = []
    engine = OpenAIEngine(server.url, "m", api_key="sk-test")
    turn = engine.complete(conversation(), [READ_TOOL], Sampling(), on_delta=lambda k, t: deltas.append((k, t)))
    assert deltas == [("reasoning", "Need to "), ("reasoning", "look."), ("content", "Reading.")]
    assert turn.reasoning == "Need to look." and turn.content == "Reading."
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("call_a", "Read", {"file_path": "a.py"}), ("call_b", "Glob", {"pattern": "*.py"})]
    assert turn.usage.prompt_tokens == 120 and turn.usage.cached_tokens == 96 and turn.usage.completion_tokens == 30
    assert turn.finish_reason == "stop" and turn.parse_error is None
    sent = server.requests[0]
    assert sent["stream"] is True and sent["tools"] == [READ_TOOL] and sent["tool_choice"] == "auto"
    assert sent["chat_template_kwargs"] == {"enable_thinking": True}
    assert (sent["temperature"], sent["top_p"], sent["top_k"], sent["min_p"]) == (0.6, 0.95, 20, 0.0)
    assert server.headers_seen[0]["Authorization"] == "Bearer sk-test"


def test_history_echoes_reasoning_and_exact_tool_calls(server: Scripted) -> None:
    server.replies.append({"json": completion({"content": "Done."})})
    convo = conversation()
    convo.append(Message(role="assistant", content="", reasoning_content="I should read it.",
                         tool_calls=[ToolCall(id="call_1", name="Read", arguments={"file_path": "a.py"})]))
    convo.append(Message(role="tool", content="a.py\n1. x = 1", tool_call_id="call_1", name="Read"))
    OpenAIEngine(server.url, "m", stream=False).complete(convo, [READ_TOOL], Sampling(enable_thinking=False))
    messages = server.requests[0]["messages"]
    assert messages[2]["reasoning_content"] == "I should read it."
    assert messages[2]["tool_calls"] == [{"id": "call_1", "type": "function",
                                          "function": {"name": "Read", "arguments": "{\"file_path\": \"a.py\"}"}}]
    assert messages[3] == {"role": "tool", "content": "a.py\n1. x = 1", "tool_call_id": "call_1", "name": "Read"}
    assert server.requests[0]["chat_template_kwargs"] == {"enable_thinking": False}


def test_calls_returned_as_plain_text_go_through_leafs_parser(server: Scripted) -> None:
    text = ("<think>\nThe file first.\n</think>\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\na.py\n"
            "</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>")
    server.replies.append({"json": completion({"content": text}, usage={"prompt_tokens": 50, "completion_tokens": 9})})
    turn = OpenAIEngine(server.url, "m", stream=False).complete(conversation(), [READ_TOOL], Sampling())
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("Read", {"file_path": "a.py", "limit": 5})]
    assert turn.reasoning == "The file first." and turn.raw_text == text and turn.content == ""


def test_broken_call_text_sets_parse_error(server: Scripted) -> None:
    text = '<tool_call>\n{"name": "Read", "arguments": {"file_path": '
    server.replies.append({"json": completion({"content": text})})
    turn = OpenAIEngine(server.url, "m", stream=False).complete(conversation(), [READ_TOOL], Sampling())
    assert turn.tool_calls == [] and turn.raw_text == text
    assert turn.parse_error is not None and "not valid" in turn.parse_error


def test_malformed_structured_arguments_are_repaired_or_emptied(server: Scripted) -> None:
    calls = [{"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{'file_path': 'a.py',}"}},
             {"id": "c2", "type": "function", "function": {"name": "Read", "arguments": "not json at all"}}]
    server.replies.append({"json": completion({"content": None, "tool_calls": calls}, finish="tool_calls")})
    turn = OpenAIEngine(server.url, "m", stream=False).complete(conversation(), [READ_TOOL], Sampling())
    assert [c.arguments for c in turn.tool_calls] == [{"file_path": "a.py"}, {}]


def test_length_finish_and_llama_server_cache_timings(server: Scripted) -> None:
    reply = completion({"content": "partial"}, finish="length", usage={"prompt_tokens": 10, "completion_tokens": 4})
    reply["usage"]["timings"] = {"cache_n": 7}
    server.replies.append({"json": reply})
    turn = OpenAIEngine(server.url, "m", stream=False).complete(conversation(), [], Sampling())
    assert turn.finish_reason == "length" and turn.usage.cached_tokens == 7
    assert "tools" not in server.requests[0]


def test_context_rejection_is_context_overflow(server: Scripted) -> None:
    server.replies.append({"status": 400, "json": {"error": {
        "message": "This model's maximum context length is 512 tokens. However, you requested 900 tokens",
        "type": "invalid_request_error", "code": "context_length_exceeded"}}})
    with pytest.raises(ContextOverflow, match="maximum context length is 512"):
        OpenAIEngine(server.url, "m").complete(conversation(), [], Sampling())


def test_server_rejecting_extra_parameters_gets_a_plain_openai_request(server: Scripted) -> None:
    server.replies.append({"status": 400, "json": {"error": {"message": "Unrecognized request argument: top_k"}}})
    server.replies.append({"json": completion({"content": "ok"})})
    engine = OpenAIEngine(server.url, "m", stream=False)
    assert engine.complete(conversation(), [READ_TOOL], Sampling()).content == "ok"
    assert "top_k" in server.requests[0] and "top_k" not in server.requests[1]
    assert "chat_template_kwargs" not in server.requests[1] and server.requests[1]["tools"] == [READ_TOOL]


def test_retries_5xx_with_retry_after_then_succeeds(server: Scripted) -> None:
    slept: list[float] = []
    server.replies += [{"status": 503, "json": {"error": "loading model"}, "headers": {"Retry-After": "0.25"}},
                       {"status": 429, "json": {"error": {"message": "busy"}}},
                       {"json": completion({"content": "fine"})}]
    engine = OpenAIEngine(server.url, "m", stream=False, sleep=slept.append)
    assert engine.complete(conversation(), [], Sampling()).content == "fine"
    assert slept[0] == 0.25 and len(slept) == 2 and len(server.requests) == 3


def test_persistent_5xx_gives_up_with_one_line(server: Scripted) -> None:
    server.replies += [{"status": 500, "json": {"error": {"message": "boom"}}}] * 3
    engine = OpenAIEngine(server.url, "m", stream=False, max_retries=2, sleep=lambda s: None)
    with pytest.raises(EngineError, match=r"HTTP 500 after 3 attempts: boom") as info:
        engine.complete(conversation(), [], Sampling())
    assert "\n" not in str(info.value)


def test_unauthorized_and_not_found_are_clear(server: Scripted) -> None:
    server.replies += [{"status": 401, "json": {"error": {"message": "bad key"}}},
                       {"status": 404, "json": {"detail": "Not Found"}}]
    engine = OpenAIEngine(server.url, "m", stream=False)
    with pytest.raises(EngineError, match="LEAF_API_KEY"):
        engine.complete(conversation(), [], Sampling())
    with pytest.raises(EngineError, match="check --base-url"):
        engine.complete(conversation(), [], Sampling())


def test_stream_cut_after_text_is_an_error_not_a_silent_retry(server: Scripted) -> None:
    server.replies.append({"events": [chunk({"content": "half an ans"})], "cut": True})
    engine = OpenAIEngine(server.url, "m", sleep=lambda s: None)
    shown: list[str] = []
    with pytest.raises(EngineError, match="cannot reach the model server"):
        engine.complete(conversation(), [], Sampling(), on_delta=lambda k, t: shown.append(t))
    assert shown == ["half an ans"] and len(server.requests) == 1


def test_error_event_mid_stream(server: Scripted) -> None:
    server.replies.append({"events": [chunk({"content": "x"}), {"error": {"message": "model crashed"}}]})
    with pytest.raises(EngineError, match="model crashed"):
        OpenAIEngine(server.url, "m").complete(conversation(), [], Sampling())


def test_unreachable_server_is_one_engine_error_line() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine = OpenAIEngine(f"http://127.0.0.1:{port}", "m", max_retries=1, sleep=lambda s: None)
    with pytest.raises(EngineError, match=f"cannot reach the model server at http://127.0.0.1:{port}") as info:
        engine.complete(conversation(), [], Sampling())
    assert "\n" not in str(info.value)


def test_model_name_is_discovered_when_not_given(server: Scripted) -> None:
    server.replies.append({"json": completion({"content": "hi"})})
    engine = OpenAIEngine(server.url + "/v1", None, stream=False)
    engine.complete(conversation(), [], Sampling())
    assert server.requests[0]["model"] == "served-model" and engine.name.startswith("openai:served-model@")


def test_empty_stream_is_asked_again_unstreamed(server: Scripted) -> None:
    # llama_cpp.server's answer to an automatic tool choice with stream=true: 200 and no events at all.
    server.replies += [{"events": []}, {"json": completion({"content": "plain"})}]
    turn = OpenAIEngine(server.url, "m").complete(conversation(), [READ_TOOL], Sampling())
    assert turn.content == "plain"
    assert server.requests[0]["stream"] is True and server.requests[1]["stream"] is False
    assert "stream_options" not in server.requests[1]


def test_turn_cap_goes_as_max_completion_tokens_and_max_tokens(server: Scripted) -> None:
    server.replies.append({"json": completion({"content": "ok"})})
    OpenAIEngine(server.url, "m", stream=False).complete(conversation(), [READ_TOOL], Sampling(max_tokens=123))
    sent = server.requests[0]
    assert sent["max_completion_tokens"] == 123 and sent["max_tokens"] == 123  # llama_cpp.server reads only max_tokens
    assert sent["tool_choice"] == "auto" and sent["parallel_tool_calls"] is True


@pytest.mark.parametrize(("error", "kept"), [
    ("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
     "max_completion_tokens"),
    ("1 validation error: max_completion_tokens: Extra inputs are not permitted", "max_tokens"),
])
def test_a_server_rejecting_one_cap_field_gets_the_other(server: Scripted, error: str, kept: str) -> None:
    server.replies += [{"status": 400, "json": {"error": {"message": error}}}, {"json": completion({"content": "a"})},
                       {"json": completion({"content": "b"})}]
    engine = OpenAIEngine(server.url, "m", stream=False)
    assert engine.complete(conversation(), [], Sampling(max_tokens=50)).content == "a"
    assert engine.complete(conversation(), [], Sampling(max_tokens=50)).content == "b"  # remembered
    for sent in server.requests[1:]:
        assert sent[kept] == 50 and len({"max_tokens", "max_completion_tokens"} & set(sent)) == 1


@pytest.mark.parametrize("message", [  # the markers of FrogNano's harness (tests/test_leaf.py)
    "CONTEXT_LENGTH_EXCEEDED",
    "Please reduce the length of the messages",
    "This model's maximum context length is 131072 tokens",
    "Input context length exceeds the model limit",
])
def test_context_rejections_frognano_recognised(server: Scripted, message: str) -> None:
    server.replies.append({"status": 400, "json": {"error": {"message": message}}})
    with pytest.raises(ContextOverflow):
        OpenAIEngine(server.url, "m", stream=False).complete(conversation(), [], Sampling())


def test_usage_the_server_does_not_send_is_unknown_not_zero(server: Scripted) -> None:
    server.replies.append({"events": [chunk({"content": "hi"}), chunk({}, "stop"), "data: [DONE]\n\n"]})
    turn = OpenAIEngine(server.url, "m").complete(conversation(), [], Sampling())
    assert turn.content == "hi"
    assert turn.usage.prompt_tokens is None and turn.usage.completion_tokens is None and not turn.usage.known


# llama_cpp.server serving a Qwen3.5 template has no reasoning parser: the generation prompt opened `<think>`, so
# the content is `reasoning…</think>answer` without an opening tag (what the real server sent in
# test_openai_llama_server.py). vLLM's Qwen3 reasoning parser reads text before the first `</think>` as reasoning.
QWEN35_CALL = "<tool_call>\n<function=Read>\n<parameter=file_path>\na.py\n</parameter>\n</function>\n</tool_call>"


def test_content_after_an_opened_think_is_split_at_the_first_close(server: Scripted) -> None:
    text = "The doc shows a <think> tag.\nRead it first.\n</think>\n\n" + QWEN35_CALL
    server.replies.append({"json": completion({"content": text})})
    turn = OpenAIEngine(server.url, "m", stream=False).complete(conversation(), [READ_TOOL], Sampling())
    assert turn.reasoning == "The doc shows a <think> tag.\nRead it first."
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("Read", {"file_path": "a.py"})]
    assert turn.content == "" and turn.raw_text == text


def test_streamed_content_after_an_opened_think_is_split(server: Scripted) -> None:
    pieces = ["Maybe <think> about ", "<tool_call> later.</thi", "nk>\n\nThe answer", " is 4."]
    server.replies.append({"events": [chunk({"content": p}) for p in pieces] + [chunk({}, "stop"), "data: [DONE]\n\n"]})
    turn = OpenAIEngine(server.url, "m").complete(conversation(), [READ_TOOL], Sampling())
    assert turn.reasoning == "Maybe <think> about <tool_call> later."
    assert turn.content == "The answer is 4." and turn.tool_calls == []


@pytest.mark.parametrize(("text", "calls", "content"), [
    ("Let me read.\n" + QWEN35_CALL, [("Read", {"file_path": "a.py"})], "Let me read."),
    ("Just an answer with <think> in it.", [], "Just an answer with <think> in it."),
])
def test_content_without_a_close_stays_content(server: Scripted, text: str, calls: list[Any], content: str) -> None:
    server.replies.append({"json": completion({"content": text})})
    turn = OpenAIEngine(server.url, "m", stream=False).complete(conversation(), [READ_TOOL], Sampling())
    assert turn.reasoning is None
    assert [(c.name, c.arguments) for c in turn.tool_calls] == calls and turn.content == content

