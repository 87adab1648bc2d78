"""Parse a model's raw reply into reasoning, content and tool calls, repairing what small models get wrong.

Formats: Qwen3-Coder XML (`<tool_call><function=NAME><parameter=K>V</parameter>…`, Qwen3.5 and FrogNano),
Hermes JSON (`<tool_call>{"name": …, "arguments": {…}}</tool_call>`), a call in a ```json / ```tool fence,
and a bare JSON object with `name` and `arguments`.

As the servers parse it (vLLM's `qwen3_coder`, SGLang's detector, llama.cpp's Qwen3.5 parser):
- Everything before `</think>` is reasoning, also when the generation prompt opened `<think>`
  (`in_reasoning=True`); a `<tool_call>` in it is reasoning, never a call. Reasoning that never closes ends
  at the first `<tool_call>` followed by `<function` (Qwen3.5 models may call without closing `</think>`; vLLM's
  Qwen3 reasoning parser, SGLang's Qwen3 detector and llama.cpp's Qwen3.5 parser all read it so); without
  one it is all reasoning (a reply cut while thinking).
  With no reasoning opened, a `</think>` after call markup is text inside a call's value, not a close.
- An XML call is read in order: `<function=NAME>`, then each `<parameter=K>` whose value runs to its
  structural `</parameter>` (xmlbody.py: vLLM's schema-aware rule, which needs the tool's parameter names),
  so a value may hold `<tool_call>`, `<parameter=…>`, `</parameter>` or `</function>` text (a file being
  written); a missing `</parameter>` ends at the next parameter of the schema.
- A function tag without its `>` and a name that is not a plain identifier (an unrendered template such as
  `{{ name }}`) are not calls. Values are typed by the tool's schema as `qwen3_coder` types them, numbers
  kept exact (repair.py). A call whose object parameter holds no object is refused (its error says which).
A reply with call markup that gives no call gets a `parse_error`, which the loop can answer with a
format-error message; plain text (a code block that mentions `"arguments":` included) is a final answer.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from pydantic import BaseModel, Field

from leaf_cli.llm.messages import ToolCall
from leaf_cli.llm.repair import as_object, coerce_value, loads_lenient
from leaf_cli.llm.xmlbody import read_body

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
_FENCE = re.compile(r"```(?:json|tool|tool_call|tool_code)?[ \t]*\n(.*?)(?:```|\Z)", re.S)
_CALL_LOOKING = re.compile(r"<tool_call|<function=|</tool_call>")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*")
_FUNCTION_TAG = re.compile(r"<function=([^>\n]*)>")
_IMPLICIT_END = re.compile(r"<tool_call>\s*<function[\s=]")
_CALL_START = re.compile(r"<tool_call>|<function=")


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
    """(reasoning, the rest). Reasoning runs to `</think>`; a `<tool_call>` before it is part of it."""
    start = text.find(THINK_OPEN)
    close = text.find(THINK_CLOSE)
    if start != -1 and (close == -1 or start < close) and not text[:start].strip():
        body_start = start + len(THINK_OPEN)
    elif in_reasoning or (close != -1 and (start == -1 or close < start) and not _CALL_START.search(text, 0, close)):
        body_start = 0  # a `</think>` after call markup, with no reasoning opened, is inside the call's values
    else:
        return None, text
    close = text.find(THINK_CLOSE, body_start)
    if close == -1:
        call = _IMPLICIT_END.search(text, body_start)
        if call is None:
            return text[body_start:].strip(), ""
        return text[body_start:call.start()].strip(), text[call.start():]
    return text[body_start:close].strip(), text[close + len(THINK_CLOSE):]


def _extract_calls(text: str, tools: list[dict[str, Any]]) -> tuple[list[ToolCall], list[str], str]:
    """Calls, the errors of call-looking pieces that failed, and the text outside the calls."""
    calls, errors, content = _find_calls(text, tools)
    kept, refused = _objects_checked(calls, tools)
    return _with_ids(kept), errors + refused, content


def _find_calls(text: str, tools: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str], str]:
    first = min((i for i in (text.find(CALL_OPEN), text.find("<function=")) if i != -1), default=-1)
    if first != -1:
        calls, errors, outside = _scan(text[first:], tools)
        before = text[:first].strip()
        tail = outside.strip()
        content = f"{before}\n\n{tail}".strip() if tail and not _CALL_LOOKING.search(tail) else before
        return calls, errors, content
    fences = list(_FENCE.finditer(text))
    for fence in fences:
        calls = _json_calls(fence.group(1))
        if calls:
            return calls, [], text[:fence.start()].strip()
    bare = _json_calls(text.strip()) if text.strip().startswith(("{", "[")) else []
    if bare:
        return bare, [], ""
    return [], [], text.strip()


def _objects_checked(calls: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The calls whose every object parameter holds an object (a JSON or Python text of one decoded), and an
    error for each other call: a tool that wants an object never gets a string (vLLM would pass it on)."""
    kept: list[dict[str, Any]] = []
    errors: list[str] = []
    for call in calls:
        schema = _properties(call["name"], tools)
        args: dict[str, Any] = {}
        problems = []
        for key, value in call["arguments"].items():
            args[key], problem = as_object(value, schema.get(key))
            if problem is not None:
                problems.append(f"parameter {key!r} {problem}")
        if problems:
            errors.append(f"the call of {call['name']} is not valid: {'; '.join(problems)}")
        else:
            kept.append({"name": call["name"], "arguments": args})
    return kept, errors


def _scan(text: str, tools: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str], str]:
    """Read calls from `text` (which starts at the first one) in order; (calls, errors, the plain text left)."""
    calls: list[dict[str, Any]] = []
    errors: list[str] = []
    outside: list[str] = []
    pos, number = 0, 0
    while pos < len(text):
        nxt = min((i for i in (text.find(CALL_OPEN, pos), text.find("<function=", pos)) if i != -1), default=-1)
        if nxt == -1:
            outside.append(text[pos:])
            break
        outside.append(text[pos:nxt])
        number += 1
        wrapped = text.startswith(CALL_OPEN, nxt)
        body_start = nxt + len(CALL_OPEN) if wrapped else nxt
        stripped = text[body_start:].lstrip()
        if stripped.startswith("<function="):
            call, end, error = _xml_call(text, body_start + len(text[body_start:]) - len(stripped), tools)
        elif wrapped:
            call, end, error = _json_block(text, body_start)
        else:
            call, end, error = None, body_start + len("<function="), "a <function= without its tool call"
        if wrapped:
            close = text.find(CALL_CLOSE, end)
            after = text[end:close] if close != -1 else text[end:]
            if close != -1 and not after.strip():
                end = close + len(CALL_CLOSE)
        if call is not None:
            calls.append(call)
        else:
            errors.append(f"tool call {number} is not valid: {error}")
        pos = max(end, nxt + 1)
    return calls, errors, "".join(outside)


def _xml_call(text: str, start: int, tools: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, int, str]:
    """The call whose `<function=` is at `start`: (call or None, where it ends, what was wrong)."""
    tag = _FUNCTION_TAG.match(text, start)
    if tag is None:
        return None, start + len("<function="), "the <function= tag has no closing >"
    name = tag.group(1).strip()
    if not _NAME.fullmatch(name):
        return None, tag.end(), f"{name!r} is not a tool name"
    schema = _properties(name, tools)
    pairs, end = read_body(text, tag.end(), _names(schema))
    args = {key: coerce_value(_strip_one_newline(raw), schema.get(key)) for key, raw in pairs}
    return {"name": name, "arguments": args}, end, ""


def _json_block(text: str, start: int) -> tuple[dict[str, Any] | None, int, str]:
    """A Hermes-style JSON call inside `<tool_call>…</tool_call>` starting at `start`."""
    close = text.find(CALL_CLOSE, start)
    nxt = text.find(CALL_OPEN, start)
    end = min((i for i in (close, nxt) if i != -1), default=len(text))
    body = text[start:end].strip()
    if body.startswith("```"):
        body = _FENCE.sub(lambda m: m.group(1), body).strip("` \n")
    found = _json_calls(body)
    if not found:
        return None, end, repr(body[:80]) if body else "it is empty"
    return found[0], end, ""


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


def _names(schema: dict[str, Any]) -> frozenset[str] | None:
    """The parameter names a call of this tool may give (None: unknown, any name). FrogNano's harness read
    `path` for `file_path` (args.py), so a model trained there writes it: it counts as a name of such a tool."""
    if not schema:
        return None
    return frozenset(schema) | ({"path"} if "file_path" in schema else set())


def _properties(name: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    for tool in tools:
        fn = tool.get("function", tool)
        if str(fn.get("name", "")).lower() == name.lower():
            return fn.get("parameters", {}).get("properties", {})
    return {}


def _with_ids(calls: list[dict[str, Any]]) -> list[ToolCall]:
    return [ToolCall(id=f"call_{uuid.uuid4().hex[:12]}", name=c["name"], arguments=c["arguments"]) for c in calls]

