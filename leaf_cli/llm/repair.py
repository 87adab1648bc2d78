"""Lenient JSON and schema-typed values for tool-call arguments written by small models.

`loads_lenient` fixes what small models get wrong in JSON: trailing commas, single-quoted strings, Python's
True/False/None, text around the object, unclosed strings, braces and brackets. `coerce_value` turns a raw
Qwen3-Coder XML parameter value into the type its JSON schema asks for, as vLLM's qwen3_coder parser does.
"""

from __future__ import annotations

import ast
import json
import math
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
    """A raw Qwen3-Coder XML parameter value typed by its JSON schema, as vLLM's `qwen3_coder` types it.

    A parameter the schema does not know stays as written. A nullable one (`null` among its types) is None
    for `null` or `None` (any case: Qwen3.5's template renders a null as Python's `None`). Then the first
    non-null type decides (for an anyOf, as vLLM; a type list tries its non-string types first): a string
    stays as written, `null` included; for any other type `null`/`None` is None; an integer is `int()`
    (else the text); a boolean is whether it reads `true`; an object or array is JSON, else a Python literal,
    each decoded once more when it gave a string (a double-encoded value), else the text.
    A number keeps every digit an integer is written with and is a float otherwise, as Python's json reads
    it: vLLM goes through float() (9007199254740993 becomes ...992, 1.25e3 the int 1250); leaf follows
    SGLang's rule here, since a rounded id or offset is wrong without anyone knowing. A value that is not
    finite (`inf`, `1e999`, `[NaN]`) stays as written, as both servers now do: JSON cannot carry it.
    """
    if schema is None:
        return raw
    kinds = _types(schema)
    kind = kinds[0].strip().lower() if kinds else "string"
    is_null = raw.lower() in ("null", "none")
    if is_null and "null" in _all_types(schema):
        return None
    if kind in ("string", "str", "text", "varchar", "char", "enum"):
        return raw
    if is_null:
        return None
    if kind.startswith(("int", "uint", "long", "short", "unsigned")):
        try:
            return int(raw)
        except ValueError:  # also past Python's 4,300-digit limit: the tool reports the text
            return raw
    if kind.startswith(("num", "float")):
        return _number(raw)
    if kind in ("boolean", "bool", "binary"):
        return raw.lower() == "true"
    return _structured(raw, kind)


def as_object(value: Any, schema: dict[str, Any] | None) -> tuple[Any, str | None]:
    """`value` for a parameter whose schema admits only an object (and maybe null): a dict as it is, a text
    of one decoded (JSON, or a Python literal); anything else gives (value, why it is refused)."""
    if schema is None or {k for k in _all_types(schema) if k != "null"} != {"object"}:
        return value, None
    if isinstance(value, str):
        value = _structured(value, "object")
    if isinstance(value, dict) or (value is None and "null" in _all_types(schema)):
        return value, None
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    return value, f"must be an object (JSON or a Python dict literal), got {shown}"


_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _number(raw: str) -> Any:
    text = raw.strip()
    if _INTEGER.fullmatch(text):
        try:
            return int(text)
        except ValueError:  # more digits than Python converts
            return raw
    if not _DECIMAL.fullmatch(text):
        return raw
    number = float(text)
    return number if math.isfinite(number) else raw


def _structured(raw: str, kind: str) -> Any:
    """An object or array value: JSON, else a Python literal, decoded once more when that gave a string."""
    value = _literal(raw)
    if value is _NOT_A_LITERAL:
        return raw
    if isinstance(value, str) and (kind in ("object", "array", "arr") or kind.startswith(("dict", "list"))):
        inner = _literal(value)
        value = value if inner is _NOT_A_LITERAL else inner
    return value


_NOT_A_LITERAL = object()


def _literal(text: str) -> Any:
    """`text` as JSON, else as a Python literal made JSON (tuples as lists), else _NOT_A_LITERAL. A value
    JSON cannot carry (a set, bytes, an infinity or NaN anywhere in it) is not one either."""
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            return _NOT_A_LITERAL
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (ValueError, TypeError, RecursionError):
        return _NOT_A_LITERAL


def _all_types(schema: dict[str, Any]) -> set[str]:
    """Every JSON type a schema admits, `null` included, over its type list and anyOf/oneOf options."""
    raw = schema.get("type")
    kinds = set(raw if isinstance(raw, list) else [raw] if isinstance(raw, str) else [])
    for option in schema.get("anyOf", []) + schema.get("oneOf", []):
        if isinstance(option, dict):
            kinds |= _all_types(option)
    return {str(k).strip().lower() for k in kinds}


def _types(schema: dict[str, Any]) -> list[str]:
    """The non-null JSON types a schema admits, the deciding one first: an anyOf/oneOf's first non-null
    option (as vLLM), a type list's non-string types before its string one (so "5" for int|str is 5)."""
    for key in ("anyOf", "oneOf"):
        options = [o for o in schema.get(key, []) if isinstance(o, dict)]
        for option in options:
            kinds = _types(option)
            if kinds:
                return kinds
    raw = schema.get("type")
    kinds = [k for k in (raw if isinstance(raw, list) else [raw] if isinstance(raw, str) else []) if k != "null"]
    ordered = [k for k in kinds if k != "string"] + [k for k in kinds if k == "string"]
    if not ordered and "enum" in schema:
        return ["enum"]
    return ordered
