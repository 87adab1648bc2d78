"""Reading an OpenAI-compatible chat completion into leaf's `AssistantTurn`: streamed (server-sent events,
tool-call fragments assembled by index) or in one JSON body; a server that sends calls as plain text gets
leaf's own reply parser."""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

import httpx

from leaf_cli.llm.engine import ContextOverflow, EngineError, OnDelta
from leaf_cli.llm.messages import AssistantTurn, ToolCall, TurnUsage

# FrogNano's harness read these as the context filling up (`max_context_len`), leaf as `max_context`.
OVERFLOW = re.compile(r"context[_ ]length[_ ]exceeded|reduce the length|maximum context length|"
                      r"context length.*exceed|exceed.*context length|context window|context size|"
                      r"too many tokens|prompt is too long|exceeds? the (available )?context", re.I)
_CALL_MARKUP = ("<tool_call", "<function=", "<think>", "</think>", "```", '"arguments"')


def read_reply(response: httpx.Response, tools: list[dict[str, Any]], relay: OnDelta,
               opened_think: bool) -> AssistantTurn:
    """The turn in a 2xx response, streamed (server-sent events) or whole; text reaches `relay` as it comes."""
    if "text/event-stream" in response.headers.get("content-type", ""):
        assembler = _StreamAssembler(relay)
        for event in _sse_events(response.iter_lines()):
            assembler.add(event)
        if not assembler.events:
            raise EmptyStream
        return assembler.turn(tools, opened_think)
    response.read()
    try:
        data = response.json()
    except ValueError:
        raise EngineError(f"the model server sent a reply that is not JSON: {response.text[:200]!r}") from None
    turn = _turn_from_json(data, tools, opened_think)
    if turn.reasoning:
        relay("reasoning", turn.reasoning)
    if turn.content:
        relay("content", turn.content)
    return turn


class EmptyStream(Exception):
    """A streamed reply that closed without a single event."""


class _StreamAssembler:
    """Accumulates streamed chunks into one turn: text deltas, tool-call fragments by index, usage."""

    def __init__(self, relay: OnDelta) -> None:
        self.relay = relay
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: dict[str, Any] = {}
        self.events = 0

    def add(self, event: dict[str, Any]) -> None:
        self.events += 1
        if "error" in event:
            message = message_of(event["error"])
            if OVERFLOW.search(message):
                raise ContextOverflow(f"the conversation does not fit the server's context: {message}")
            raise EngineError(f"the model server failed mid-reply: {message}")
        self.usage = event.get("usage") or self.usage
        if event.get("timings"):
            self.usage = {**self.usage, "timings": event["timings"]}
        for choice in event.get("choices") or []:
            self.finish = choice.get("finish_reason") or self.finish
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                self.reasoning.append(reasoning)
                self.relay("reasoning", reasoning)
            if delta.get("content"):
                self.content.append(delta["content"])
                self.relay("content", delta["content"])
            for fragment in delta.get("tool_calls") or []:
                self._add_call(fragment)

    def _add_call(self, fragment: dict[str, Any]) -> None:
        call = self.calls.setdefault(int(fragment.get("index", len(self.calls))), {"id": None, "name": "", "args": ""})
        call["id"] = call["id"] or fragment.get("id")
        function = fragment.get("function") or {}
        call["name"] += function.get("name") or ""
        arguments = function.get("arguments")
        call["args"] += arguments if isinstance(arguments, str) else json.dumps(arguments) if arguments else ""

    def turn(self, tools: list[dict[str, Any]], opened_think: bool) -> AssistantTurn:
        calls = [{"id": c["id"], "function": {"name": c["name"], "arguments": c["args"]}}
                 for _, c in sorted(self.calls.items())]
        message = {"content": "".join(self.content), "reasoning_content": "".join(self.reasoning) or None,
                   "tool_calls": calls}
        data = {"choices": [{"message": message, "finish_reason": self.finish}], "usage": self.usage}
        return _turn_from_json(data, tools, opened_think)


def _sse_events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """`data:` payloads of a server-sent-event stream as dicts, up to `[DONE]`."""
    for line in lines:
        if not line.startswith("data:"):
            continue  # blank separators, comments (": ping"), `event:` lines
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        try:
            yield json.loads(payload)
        except json.JSONDecodeError:
            raise EngineError(f"the model server sent a malformed stream event: {payload[:200]!r}") from None


def _turn_from_json(data: dict[str, Any], tools: list[dict[str, Any]], opened_think: bool = False) -> AssistantTurn:
    """Build the turn from a (possibly re-assembled) chat-completion object.

    `opened_think`: the prompt opened `<think>`, so content holding `</think>` starts inside reasoning.
    """
    if "error" in data and not data.get("choices"):
        raise EngineError(f"the model server returned an error: {message_of(data['error'])}")
    try:
        choice = data["choices"][0]
    except (KeyError, IndexError, TypeError):
        raise EngineError(f"the model server's reply has no choices: {json.dumps(data)[:200]}") from None
    message = choice.get("message") or {}
    content = message.get("content") or ""
    reasoning = message.get("reasoning_content") or message.get("reasoning") or None
    finish = "length" if choice.get("finish_reason") == "length" else "stop"
    usage = _usage(data.get("usage") or {})
    calls = [_tool_call(c, i) for i, c in enumerate(message.get("tool_calls") or [])]
    parse_error = None
    if not calls and any(marker in content for marker in _CALL_MARKUP):
        from leaf_cli.llm.parse import parse_reply  # the server did not parse calls: leaf's parser does

        # Only a closed block is reasoning: without `</think>` the server's template may not have opened one.
        in_reasoning = opened_think and reasoning is None and "</think>" in content
        parsed = parse_reply(content, tools, in_reasoning=in_reasoning)
        calls, parse_error = parsed.tool_calls, parsed.parse_error
        reasoning = reasoning or parsed.reasoning
        raw, content = content, parsed.content
    else:
        raw = content
    return AssistantTurn(content=content, reasoning=reasoning, tool_calls=calls, raw_text=raw,
                         finish_reason=finish, parse_error=parse_error, usage=usage)


def _tool_call(raw: dict[str, Any], index: int) -> ToolCall:
    function = raw.get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        from leaf_cli.llm.repair import loads_lenient

        arguments = loads_lenient(arguments) if arguments.strip() else {}
    # Malformed arguments become {} as in FrogNano's harness; the tool then reports the missing fields.
    return ToolCall(id=raw.get("id") or f"call_{index}", name=str(function.get("name") or ""),
                    arguments=arguments if isinstance(arguments, dict) else {})


def _usage(raw: dict[str, Any]) -> TurnUsage:
    """The server's counts; one it did not send stays None (unknown), never 0."""
    details = raw.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens")
    if cached is None:  # llama-server reports its prompt cache in `timings.cache_n`
        cached = (raw.get("timings") or {}).get("cache_n", 0)
    return TurnUsage(prompt_tokens=_count(raw.get("prompt_tokens")), cached_tokens=int(cached or 0),
                     completion_tokens=_count(raw.get("completion_tokens")))


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def message_of(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("msg") or json.dumps(error))
    if isinstance(error, list) and error:  # FastAPI validation errors: a list of {"loc", "msg"}
        return "; ".join(message_of(e) for e in error)
    return str(error)
