"""Lenient JSON and schema-typed values for tool-call arguments written by small models.

`loads_lenient` fixes what small models get wrong in JSON: trailing commas, single-quoted strings, Python's
True/False/None, text around the object, unclosed strings, braces and brackets. `coerce_value` turns a raw
Qwen3-Coder XML parameter value into the type its JSON schema asks for, as vLLM's qwen3_coder parser does.
"""

from __future__ import annotations

import ast
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
    """A raw Qwen3-Coder XML parameter value typed as vLLM's `qwen3_coder` parser types it.

    `null` (any case) is None; a parameter the schema does not know, or a string one, stays as written; an
    integer is `int()` (else the text); a number is a float, or an int when it has no fraction; a boolean is
    whether it reads `true`; anything else (object, array) is JSON, else a Python literal, else the text. An
    object sent as a JSON string of an object (double-encoded) is decoded once more.
    """
    if raw.lower() == "null":
        return None
    if schema is None:
        return raw
    kinds = _types(schema)
    kind = kinds[0].strip().lower() if kinds else "string"
    if kind in ("string", "str", "text", "varchar", "char", "enum"):
        return raw
    if kind.startswith(("int", "uint", "long", "short", "unsigned")):
        try:
            return int(raw)
        except ValueError:
            return raw
    if kind.startswith(("num", "float")):
        try:
            number = float(raw)
            return number if number - int(number) != 0 else int(number)
        except (ValueError, OverflowError):
            return raw
    if kind in ("boolean", "bool", "binary"):
        return raw.lower() == "true"
    return _structured(raw, kind)


def _structured(raw: str, kind: str) -> Any:
    try:
        value = json.loads(raw)
    except ValueError:
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            return raw
    if kind in ("object", "dict") and isinstance(value, str):  # double-encoded: a JSON string of an object
        try:
            inner = json.loads(value)
        except ValueError:
            return value
        return inner if isinstance(inner, dict) else value
    return value


def _types(schema: dict[str, Any]) -> list[str]:
    """The JSON types a schema admits, non-string ones first (so "5" for int|str becomes 5)."""
    kinds: list[str] = []
    raw = schema.get("type")
    kinds += raw if isinstance(raw, list) else [raw] if isinstance(raw, str) else []
    for option in schema.get("anyOf", []) + schema.get("oneOf", []):
        kinds += _types(option)
    ordered = [k for k in kinds if k not in ("string", "null")] + [k for k in kinds if k in ("string", "null")]
    return list(dict.fromkeys(ordered))
