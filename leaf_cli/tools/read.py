"""Read: a text file as numbered lines, `N. text`, under a header line naming the file.

As FrogNano's harness read it: the bytes decoded as UTF-8 with invalid bytes replaced (a BOM stays, as
U+FEFF at the start of line 1), split by `str.splitlines` (so form feeds and U+2028 end lines too), the
lines from `offset` (1-based; below 1 means 1) on, `limit` of them (0 or less: all), the whole cut at
20,000 chars with `\\n[truncated K chars]`. An offset past the end shows the header line alone. A missing
file or a folder gives the OS error. Files up to 1 MB are decoded in one go; larger ones stream, so memory
stays flat and a `limit` never reads past the lines it shows. A file name that is not UTF-8 shows its bad
bytes as U+FFFD in the header and in leaf's own errors (`output.observed`), as the harness's printed output did.
"""

from __future__ import annotations

import codecs
import operator
import os
from typing import Iterator

from pydantic import Field

from leaf_cli.tools.args import CallArgs, LeafArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.output import READ_CHARS, HeadBuffer, observed, truncate, truncation_marker
from leaf_cli.tools.textfile import open_regular
from leaf_cli.tools.workspace import Workspace

WHOLE_FILE_BYTES = 1 << 20
"""Files up to this size are decoded at once (fast); larger ones stream."""
CHUNK = 1 << 18
"""Bytes read from a large file at a time (its lines are held as a list of strings while they are rendered)."""
_LINE_ENDS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""The characters `str.splitlines` ends a line at (`\\r\\n` counts as one)."""


class ReadArgs(LeafArgs):
    file_path: str = Field(description="Path to the file to read.")
    offset: int | None = Field(None, description="Optional 1-based starting line.")
    limit: int | None = Field(None, description="Optional maximum number of lines.")


def run_read(args: CallArgs, workspace: Workspace) -> str:
    target = workspace.target(args.path("file_path"))
    fd, size = open_regular(target, workspace)
    try:
        offset = max(1, args.optional_int("offset", 1))  # read after the open, in the harness's order
        limit = args.optional_int("limit", 0)
        if size <= WHOLE_FILE_BYTES:
            return _render_whole(_read_all(fd, size), target.shown, offset, limit)
        return _render_stream(fd, target.shown, offset, limit)
    finally:
        os.close(fd)


def _read_all(fd: int, size: int) -> bytes:
    """The whole file: one read when it is `size` bytes long (asking one byte more shows it did not grow),
    more when it did or its size was not known (files under /proc report 0)."""
    data = os.read(fd, size + 1)
    if len(data) <= size:
        return data
    parts = [data]
    while chunk := os.read(fd, CHUNK):
        parts.append(chunk)
    return b"".join(parts)


def _render_whole(data: bytes, shown: str, offset: int, limit: int) -> str:
    lines = data.decode("utf-8", errors="replace").splitlines()
    end = len(lines) if limit <= 0 else min(len(lines), offset - 1 + limit)
    selected = lines[offset - 1:end]
    # Each shown line adds at least 4 chars (`\nN. `), so past this many lines the cap is surely reached: only
    # they are numbered; the length of the rest is counted (the marker says how many chars were cut).
    shown_lines = READ_CHARS // 4 + 1
    body = "\n".join(map(operator.add, _numbers(offset, offset - 1 + min(len(selected), shown_lines)),
                         selected[:shown_lines]))
    if len(selected) <= shown_lines:
        return truncate(f"{shown}\n{body}", READ_CHARS)
    total = len(shown) + 1 + sum(map(len, selected)) + _prefix_chars(offset, offset - 1 + len(selected)) - 1
    return f"{shown}\n{body}"[:READ_CHARS] + truncation_marker(total - READ_CHARS)


_number_table: list[str] = []
_NUMBER_TABLE_MAX = 1 << 16


def _numbers(first: int, last: int) -> list[str]:
    """`N. ` for N from `first` to `last`. Formatting them was the largest cost of reading a small file, so
    they come from a table (up to 65,536) built once and replaced whole when it grows, never changed in place
    (another thread may be reading it)."""
    global _number_table
    table = _number_table
    if last >= len(table):
        if last >= _NUMBER_TABLE_MAX:
            return [f"{n}. " for n in range(first, last + 1)]
        table = [f"{n}. " for n in range(min(_NUMBER_TABLE_MAX, max(1024, 2 * last)))]
        _number_table = table
    return table[first:last + 1]


def _prefix_chars(first: int, last: int) -> int:
    """Chars of `\\nN. ` for every line number N from `first` to `last`."""
    total, low, digits = 0, 1, 1
    while low <= last:
        high = low * 10 - 1
        a, b = max(first, low), min(last, high)
        if a <= b:
            total += (b - a + 1) * (digits + 3)
        low, digits = low * 10, digits + 1
    return total


def _render_stream(fd: int, shown: str, offset: int, limit: int) -> str:
    """The rendering of a large file, line by line: the kept head is built, the rest only counted."""
    out = HeadBuffer(READ_CHARS)
    out.add(shown + "\n")
    end = None if limit <= 0 else offset - 1 + limit
    lineno = 0
    for piece, starts in _pieces(fd):
        if starts:
            lineno += 1
            if end is not None and lineno > end:
                break
            if lineno >= offset:
                prefix = f"{lineno}. " if lineno == offset else f"\n{lineno}. "
                if out.full:
                    out.count(len(prefix))
                else:
                    out.add(prefix)
        if lineno >= offset:
            if out.full:
                out.count(len(piece))
            else:
                out.add(piece)
    if out.total <= READ_CHARS:
        return out.text
    return out.text[:READ_CHARS] + truncation_marker(out.total - READ_CHARS)


def _pieces(fd: int) -> Iterator[tuple[str, bool]]:
    """The file's lines as `str.splitlines` splits its decoded text, in pieces of at most about CHUNK chars:
    (text without its line end, whether it starts a new line)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    carry, at_start = "", True
    while True:
        data = os.read(fd, CHUNK)
        text = carry + decoder.decode(data, final=not data)
        carry = ""
        if data and text.endswith("\r"):
            text, carry = text[:-1], "\r"  # it may be the first half of `\r\n`
        if not text:
            if not data:
                return
            continue
        parts = text.splitlines(keepends=True)
        for part in parts:
            ended = part[-1] in _LINE_ENDS
            body = part[:-2] if part.endswith("\r\n") else part[:-1] if ended else part
            yield body, at_start
            at_start = ended
        if not data:
            return


READ = Tool(name="Read", description="Read a text file. Returns numbered lines.", args=ReadArgs, run=observed(run_read))
