"""Lenient JSON and schema-typed values for tool-call arguments written by small models.

`loads_lenient` fixes what small models get wrong in JSON: trailing commas, single-quoted strings, Python's
True/False/None, text around the object, unclosed strings, braces and brackets. `coerce_value` turns a raw
Qwen3-Coder XML parameter value into the type its JSON schema asks for (as vLLM's qwen3_coder parser does).
"""

from __future__ import annotations

import json
import re
from typing import Any

_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_CLOSER = {"{": "}", "[": "]"}


def loads_lenient(text: str) -> Any | None:
    """Parse JSON, repairing it when needed. None when nothing object- or array-like can be recovered."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        pass
    start = min((i for i in (text.find("{"), text.find("[")) if i != -1), default=-1)
    if start == -1:
        return None
    try:
        return json.loads(_repair(text[start:]))
    except (json.JSONDecodeError, ValueError):
        return None


def _repair(text: str) -> str:
    """One pass over the text: requote strings, map Python literals, drop trailing commas, close what is open."""
    out: list[str] = []
    stack: list[str] = []
    quote = ""  # the quote character of the string we are inside, "" outside strings
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and i + 1 < len(text):
                nxt = text[i + 1]
                out.append(ch + nxt if not (quote == "'" and nxt == "'") else "'")
                i += 2
                continue
            if ch == quote:
                out.append('"')
                quote = ""
            elif ch == '"':  # a double quote inside a single-quoted string
                out.append('\\"')
            elif ch == "\n":
                out.append("\\n")
            else:
                out.append(ch)
        elif ch in "\"'":
            quote = ch
            out.append('"')
        elif ch in _CLOSER:
            stack.append(_CLOSER[ch])
            out.append(ch)
        elif ch in "}]":
            _drop_trailing_comma(out)
            if stack and stack[-1] == ch:
                stack.pop()
            out.append(ch)
            if not stack:
                break  # the value is complete: ignore any text after it
        else:
            word = re.match(r"[A-Za-z_]+", text[i:])
            if word:
                out.append(_PY_LITERALS.get(word.group(0), word.group(0)))
                i += len(word.group(0))
                continue
            out.append(ch)
        i += 1
    if quote:
        out.append('"')
    _drop_trailing_comma(out)
    out.extend(reversed(stack))
    return "".join(out)


def _drop_trailing_comma(out: list[str]) -> None:
    j = len(out) - 1
    while j >= 0 and out[j].isspace():
        j -= 1
    if j >= 0 and out[j] == ",":
        del out[j]


def coerce_value(raw: str, schema: dict[str, Any] | None) -> Any:
    """Convert a raw parameter string by its JSON schema; strings (and failures) stay raw."""
    types = _types(schema or {})
    if not types or "string" in types and len(types) == 1:
        return raw
    text = raw.strip()
    if "null" in types and text.lower() in ("null", "none"):
        return None
    for kind in types:
        if kind == "string":
            return raw
        value = _convert(text, kind)
        if value is not _FAIL:
            return value
    return raw


_FAIL = object()


def _convert(text: str, kind: str) -> Any:
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                return _FAIL
            return int(number) if number.is_integer() else _FAIL
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return _FAIL
        return int(text) if re.fullmatch(r"-?\d+", text) else number
    if kind == "boolean":
        lowered = text.lower()
        return True if lowered in ("true", "1", "yes") else False if lowered in ("false", "0", "no") else _FAIL
    if kind in ("object", "array"):
        value = loads_lenient(text)
        wanted = dict if kind == "object" else list
        return value if isinstance(value, wanted) else _FAIL
    return _FAIL


def _types(schema: dict[str, Any]) -> list[str]:
    """The JSON types a schema admits, non-string ones first (so "5" for int|str becomes 5)."""
    kinds: list[str] = []
    raw = schema.get("type")
    kinds += raw if isinstance(raw, list) else [raw] if isinstance(raw, str) else []
    for option in schema.get("anyOf", []) + schema.get("oneOf", []):
        kinds += _types(option)
    ordered = [k for k in kinds if k not in ("string", "null")] + [k for k in kinds if k in ("string", "null")]
    return list(dict.fromkeys(ordered))
