"""The body of one Qwen3-Coder XML call: its `<parameter=K>` values, and where each value really ends.

A value may itself hold call markup (a Write of a test fixture, a chat template, a parser's own tests), so a
`</parameter>` ends it only where it is structural, as vLLM's qwen3_coder reads it (its schema-aware rule):
- at nesting depth zero, counting a `<parameter=…>` that starts a line inside the value as opening a literal
  pair whose `</parameter>` closes it again (whatever its name: a nested example may be another tool's), and
- followed, after whitespace, by the next parameter of the tool's schema (any name when the tool or its
  schema is unknown), `</function>`, `</tool_call>` or the end of the reply.
A value with no such close (a missing `</parameter>`) ends at the next line-start `<parameter=NAME>` of the
schema not yet given in this call, else at a `</function>` that ends the call (followed by `</tool_call>` or
the end), else at a `</tool_call>` that ends it, else at the end of the reply (a reply cut short).
"""

from __future__ import annotations

import re

PARAM_OPEN, PARAM_CLOSE = "<parameter=", "</parameter>"
FUNCTION_CLOSE, CALL_OPEN, CALL_CLOSE = "</function>", "<tool_call>", "</tool_call>"
_LINE_OPEN = "\n" + PARAM_OPEN
_NAME_END = re.compile(r"[>\n]")


def read_body(text: str, pos: int, names: frozenset[str] | None) -> tuple[list[tuple[str, str]], int]:
    """The (name, raw value) pairs of the body starting at `pos`, and where the call ends: after its
    `</function>` when there is one, else after the last value. `names`: the schema's parameter names."""
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    while True:
        at = _skip_space(text, pos)
        if text.startswith(FUNCTION_CLOSE, at):
            return pairs, at + len(FUNCTION_CLOSE)
        key_end = _NAME_END.search(text, at + len(PARAM_OPEN)) if text.startswith(PARAM_OPEN, at) else None
        if key_end is None or key_end.group() != ">":
            return pairs, pos  # not a parameter tag (or one without its `>`): the body ends here
        key = text[at + len(PARAM_OPEN):key_end.start()].strip()
        value_start = key_end.end()
        seen.add(key)
        end, pos = _value_end(text, value_start, names, seen)
        pairs.append((key, text[value_start:end]))


def _value_end(text: str, start: int, names: frozenset[str] | None, seen: set[str]) -> tuple[int, int]:
    """(where the value starting at `start` ends, where reading goes on after it)."""
    close = _structural_close(text, start, names)
    if close != -1:
        return close, close + len(PARAM_CLOSE)
    nxt = _next_line_param(text, start, start, None if names is None else names - seen)
    if nxt != -1:
        return nxt, nxt
    end = _closing(text, start, FUNCTION_CLOSE)
    if end == -1:
        end = _closing(text, start, CALL_CLOSE)
    end = len(text) if end == -1 else end
    return end, end


def _structural_close(text: str, start: int, names: frozenset[str] | None) -> int:
    """The `</parameter>` that ends the value starting at `start`, or -1 when it has none."""
    depth, pos, opened = 0, start, _next_line_param(text, start, start, None)
    while True:
        close = text.find(PARAM_CLOSE, pos)
        if close == -1:
            return -1
        if opened != -1 and opened < pos:  # passed: find the next one (found once per open, not per close)
            opened = _next_line_param(text, start, pos, None)
        if opened != -1 and opened < close:
            depth, pos = depth + 1, opened + len(PARAM_OPEN)
        elif depth:
            depth, pos = depth - 1, close + len(PARAM_CLOSE)
        elif _ends_value(text, close + len(PARAM_CLOSE), names):
            return close
        else:
            pos = close + len(PARAM_CLOSE)


def _ends_value(text: str, after: int, names: frozenset[str] | None) -> bool:
    """Whether what follows a depth-zero `</parameter>` makes it structural."""
    at = _skip_space(text, after)
    if at == len(text) or text.startswith((FUNCTION_CLOSE, CALL_CLOSE), at):
        return True
    return text.startswith(PARAM_OPEN, at) and _known(text, at, names)


def _next_line_param(text: str, value_start: int, pos: int, names: frozenset[str] | None) -> int:
    """The next `<parameter=` at or after `pos` that starts a line (or the value), named in `names` when given."""
    if pos == value_start and text.startswith(PARAM_OPEN, pos) and _known(text, pos, names):
        return pos
    at = max(pos, 1) - 1
    while (at := text.find(_LINE_OPEN, at)) != -1:  # str.find: far faster than a regex with a lookbehind
        if _known(text, at + 1, names):
            return at + 1
        at += 1
    return -1


def _known(text: str, tag: int, names: frozenset[str] | None) -> bool:
    """Whether the `<parameter=NAME>` at `tag` names one of `names` (None: any name)."""
    if names is None:
        return True
    end = _NAME_END.search(text, tag + len(PARAM_OPEN))
    return end is not None and end.group() == ">" and text[tag + len(PARAM_OPEN):end.start()].strip() in names


def _closing(text: str, start: int, tag: str) -> int:
    """The first `tag` after `start` that is followed only by whitespace, `</tool_call>` or a next `<tool_call>`
    (so it ends the call rather than sitting inside a value), or -1."""
    pos = start
    while (found := text.find(tag, pos)) != -1:
        at = _skip_space(text, found + len(tag))
        if at == len(text) or text.startswith((CALL_CLOSE, CALL_OPEN), at):
            return found
        pos = found + len(tag)
    return -1


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos
