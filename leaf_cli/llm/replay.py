"""The replay engine: a scripted model, one assistant turn per JSON line. The deterministic fake of leaf.

A line is `{"content": ..., "reasoning_content": ..., "tool_calls": [{"name": ..., "arguments": {...}}]}`;
OpenAI-shaped calls (`{"type": "function", "function": {"name": ..., "arguments": "<json>"}}`) work too.
Optional keys: `finish_reason` ("length" simulates a cut reply), `usage` ({"prompt_tokens": ...}). A line
without `tool_calls` whose content holds tool-call markup goes through leaf's reply parser, exactly as a
real model's text would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from leaf_cli.errors import LeafError
from leaf_cli.llm.engine import OnDelta, ReplayExhausted, Sampling
from leaf_cli.llm.messages import AssistantTurn, Conversation, ToolCall, TurnUsage


class ReplayEngine:
    def __init__(self, turns: list[dict[str, Any]], name: str = "replay") -> None:
        self.turns = turns
        self.name = name
        self.context_limit = 1 << 30
        self.position = 0

    @classmethod
    def from_file(cls, path: Path) -> "ReplayEngine":
        if not path.is_file():
            raise LeafError(f"replay file not found: {path}")
        turns = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                turn = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LeafError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
            if not isinstance(turn, dict):
                raise LeafError(f"{path}:{number}: expected a JSON object, got {type(turn).__name__}")
            problem = _shape_problem(turn)
            if problem:
                raise LeafError(f"{path}:{number}: {problem}")
            turns.append(turn)
        return cls(turns, name=f"replay:{path}")

    def complete(self, conversation: Conversation, tools: list[dict[str, Any]], sampling: Sampling,
                 on_delta: OnDelta | None = None) -> AssistantTurn:
        if self.position >= len(self.turns):
            raise ReplayExhausted(f"the replay script ended after {len(self.turns)} turns")
        line = self.turns[self.position]
        self.position += 1
        turn = self._turn(line, tools)
        if on_delta is not None:
            if turn.reasoning:
                on_delta("reasoning", turn.reasoning)
            if turn.content:
                on_delta("content", turn.content)
        return turn

    def _turn(self, line: dict[str, Any], tools: list[dict[str, Any]]) -> AssistantTurn:
        content = str(line.get("content") or "")
        reasoning = line.get("reasoning_content")
        # A script line with `usage` gives its counts (a key left out is 0); one without has no usage (unknown).
        given = line.get("usage")
        usage = TurnUsage(**{"prompt_tokens": 0, "completion_tokens": 0, **given}) if isinstance(given, dict) else TurnUsage()
        finish = line.get("finish_reason", "stop")
        if "tool_calls" not in line and ("<tool_call>" in content or "<function=" in content):
            from leaf_cli.llm.parse import parse_reply

            parsed = parse_reply(content, tools)
            return AssistantTurn(content=parsed.content, reasoning=reasoning or parsed.reasoning,
                                 tool_calls=parsed.tool_calls, parse_error=parsed.parse_error,
                                 raw_text=content, finish_reason=finish, usage=usage)
        calls = [_call(c, f"call_{self.position}_{i}") for i, c in enumerate(line.get("tool_calls") or [])]
        return AssistantTurn(content=content, reasoning=reasoning, tool_calls=calls, raw_text=content,
                             finish_reason=finish, usage=usage)


def _shape_problem(turn: dict[str, Any]) -> str | None:
    """Why a script line cannot be a turn (checked when the script is read, before any run starts)."""
    calls = turn.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        return f"tool_calls must be a list of calls, got {type(calls).__name__}"
    for call in calls or []:
        fn = call.get("function", call) if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            return f"each tool call must be a JSON object, got {type(call).__name__}"
        if not isinstance(fn.get("name", ""), str):
            return "a tool call's name must be a string"
    for key in ("content", "reasoning_content", "finish_reason"):
        if turn.get(key) is not None and not isinstance(turn[key], str):
            return f"{key} must be a string"
    if turn.get("usage") is not None and not isinstance(turn["usage"], dict):
        return "usage must be a JSON object"
    return None


def _call(raw: dict[str, Any], default_id: str) -> ToolCall:
    """Accept leaf's `{"name", "arguments"}` and OpenAI's `{"function": {"name", "arguments": "<json>"}}`."""
    fn = raw.get("function", raw)
    args = fn.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            args = {}  # as FrogNano's harness: malformed JSON arguments become {} and the tool reports it
    return ToolCall(id=raw.get("id") or default_id, name=str(fn.get("name", "")), arguments=args if isinstance(args, dict) else {})
