"""Parse a model's raw reply into reasoning, content and tool calls, repairing what small models get wrong.

Formats: Qwen3-Coder XML (`<tool_call><function=NAME><parameter=K>V</parameter>…`, Qwen3.5 and FrogNano),
Hermes JSON (`<tool_call>{"name": …, "arguments": {…}}</tool_call>`), a call in a ```json / ```tool fence,
and a bare JSON object with `name` and `arguments`. `<think>…</think>` is reasoning, also when the generation
prompt opened `<think>` (`in_reasoning=True`) and when a `<tool_call>` starts before `</think>` closes (vLLM
reads `<tool_call>` as the end of reasoning too). A reply that looks like a call but cannot be parsed gets a
`parse_error`, which the loop answers with a format-error message; plain text is a final answer.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from pydantic import BaseModel, Field

from leaf_cli.llm.messages import ToolCall
from leaf_cli.llm.repair import coerce_value, loads_lenient

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)
_FUNCTION = re.compile(r"<function=([^>\n]*)>?(.*?)(?:</function>|(?=<function=)|\Z)", re.S)
_PARAMETER = re.compile(r"<parameter=([^>\n]*)>(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|\Z)", re.S)
_FENCE = re.compile(r"```(?:json|tool|tool_call|tool_code)?[ \t]*\n(.*?)(?:```|\Z)", re.S)
_CALL_LOOKING = re.compile(r"<tool_call|<function=|</tool_call>|\"arguments\"\s*:")


class ParsedReply(BaseModel):
    """A reply split into its parts. `parse_error` says why call-looking text gave no (or too few) calls."""

    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    parse_error: str | None = None


def parse_reply(text: str, tools: list[dict[str, Any]], *, in_reasoning: bool = False) -> ParsedReply:
    """Parse raw model text. `tools` (OpenAI schemas) type the XML parameter values.

    `in_reasoning`: the generation prompt already opened `<think>`, so the text starts inside reasoning.
    """
    reasoning, rest = split_reasoning(text, in_reasoning)
    calls, errors, content = _extract_calls(rest, tools)
    error = "; ".join(errors) if errors else None
    if not calls and error is None and _CALL_LOOKING.search(rest):
        error = "found tool-call markup but no complete call"
    return ParsedReply(content=content, reasoning=reasoning, tool_calls=calls, parse_error=error)


def split_reasoning(text: str, in_reasoning: bool = False) -> tuple[str | None, str]:
    """(reasoning, the rest). Reasoning ends at `</think>` or at a `<tool_call>` that comes first."""
    start = text.find(THINK_OPEN)
    close = text.find(THINK_CLOSE)
    if start != -1 and (close == -1 or start < close) and not text[:start].strip():
        body_start = start + len(THINK_OPEN)
    elif in_reasoning or (close != -1 and (start == -1 or close < start)):
        body_start = 0
    else:
        return None, text
    close = text.find(THINK_CLOSE, body_start)
    call = text.find(CALL_OPEN, body_start)
    if call != -1 and (close == -1 or call < close):
        rest = text[call:]
        return text[body_start:call].strip(), rest.replace(THINK_CLOSE, "", 1) if THINK_CLOSE in rest else rest
    if close == -1:
        return text[body_start:].strip(), ""
    return text[body_start:close].strip(), text[close + len(THINK_CLOSE):]


def _extract_calls(text: str, tools: list[dict[str, Any]]) -> tuple[list[ToolCall], list[str], str]:
    """Calls, the errors of call-looking pieces that failed, and the text outside the calls."""
    if CALL_OPEN in text:
        first = text.find(CALL_OPEN)
        calls, errors = _parse_blocks([m.group(1) for m in _BLOCK.finditer(text, first)], tools)
        return calls, errors, _outside(text, first)
    if "<function=" in text:  # XML call without its <tool_call> wrapper
        first = text.find("<function=")
        calls, errors = _parse_blocks([text[first:]], tools)
        return calls, errors, _outside(text, first)
    fences = list(_FENCE.finditer(text))
    for fence in fences:
        calls = _json_calls(fence.group(1))
        if calls:
            return _with_ids(calls), [], text[:fence.start()].strip()
    bare = _json_calls(text.strip()) if text.strip().startswith(("{", "[")) else []
    if bare:
        return _with_ids(bare), [], ""
    return [], [], text.strip()


def _outside(text: str, first: int) -> str:
    """Content is the text before the first call plus any plain text the model wrote between or after calls."""
    before = text[:first].strip()
    tail = _BLOCK.sub("", text[first:]).strip() if text.startswith(CALL_OPEN, first) else ""
    return f"{before}\n\n{tail}".strip() if tail and not _CALL_LOOKING.search(tail) else before


def _parse_blocks(blocks: list[str], tools: list[dict[str, Any]]) -> tuple[list[ToolCall], list[str]]:
    calls: list[ToolCall] = []
    errors: list[str] = []
    for number, block in enumerate(blocks, 1):
        body = block.strip()
        if body.startswith("```"):
            body = _FENCE.sub(lambda m: m.group(1), body).strip("` \n")
        if "<function=" in body:
            found = [_xml_call(m.group(1), m.group(2), tools) for m in _FUNCTION.finditer(body)]
        else:
            found = _json_calls(body)
        if not found:
            errors.append(f"tool call {number} is not valid: {body[:80]!r}" if body else f"tool call {number} is empty")
        calls += found
    return _with_ids(calls), errors


def _xml_call(name: str, body: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    schema = _properties(name.strip(), tools)
    args: dict[str, Any] = {}
    for match in _PARAMETER.finditer(body):
        key = match.group(1).strip()
        args[key] = coerce_value(_strip_one_newline(match.group(2)), schema.get(key))
    return {"name": name.strip(), "arguments": args}


def _strip_one_newline(value: str) -> str:
    """The template writes `<parameter=K>\\nV\\n</parameter>`: remove exactly those newlines, keep the rest."""
    value = value[1:] if value.startswith("\n") else value
    return value[:-1] if value.endswith("\n") else value


def _json_calls(text: str) -> list[dict[str, Any]]:
    """`{"name", "arguments"}` objects (or a list of them) in `text`, repaired when needed."""
    value = loads_lenient(text)
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if not isinstance(item, dict):
            return []
        item = item.get("function", item) if isinstance(item.get("function"), dict) else item
        name = item.get("name")
        args = item.get("arguments", item.get("parameters", {}))
        if isinstance(args, str):
            args = loads_lenient(args) if args.strip() else {}
        if not isinstance(name, str) or not name.strip() or not isinstance(args, dict):
            return []
        out.append({"name": name.strip(), "arguments": args})
    return out


def _properties(name: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    for tool in tools:
        fn = tool.get("function", tool)
        if str(fn.get("name", "")).lower() == name.lower():
            return fn.get("parameters", {}).get("properties", {})
    return {}


def _with_ids(calls: list[dict[str, Any]]) -> list[ToolCall]:
    return [ToolCall(id=f"call_{uuid.uuid4().hex[:12]}", name=c["name"], arguments=c["arguments"]) for c in calls]

