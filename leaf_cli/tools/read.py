"""Read: a text file as numbered lines, `N. text`, under a header line naming the file.

Lines are split at `\\n`, `\\r\\n` and `\\r` (the harness's splitlines, without its rarer separators such as
form feed, so numbers agree with `grep -n`). Small files are decoded in one go; large ones stream, so a
`limit` never reads past the lines it shows and a whole-file read of a huge file keeps only the head.
"""

from __future__ import annotations

import io
import operator
import os
import stat
from pathlib import Path
from typing import BinaryIO

from pydantic import Field

from leaf_cli.tools.args import ToolArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.output import READ_CHARS, HeadBuffer, truncate, truncation_marker
from leaf_cli.tools.textfile import BOM, SNIFF_BYTES, BinaryFileError, looks_binary
from leaf_cli.tools.workspace import Workspace

WHOLE_FILE_BYTES = 1 << 20
"""Files up to this size are decoded at once (fast); larger ones stream line by line."""
CHUNK = 1 << 20
"""Most chars taken from a stream at a time, so one giant line cannot fill memory."""


class ReadArgs(ToolArgs):
    path_alias = "file_path"

    file_path: str = Field(description="Path to the file to read.")
    offset: int | None = Field(None, description="Optional 1-based starting line.")
    limit: int | None = Field(None, description="Optional maximum number of lines.")


def run_read(args: ReadArgs, workspace: Workspace) -> str:
    path = workspace.resolve(args.file_path)
    shown = workspace.display(path)
    # As in the harness: an offset below 1 means 1, a limit of 0 or less means "to the end".
    offset = max(1, args.offset or 1)
    limit = args.limit if args.limit and args.limit > 0 else None
    fd, size = _open_regular(path, shown)
    if size <= WHOLE_FILE_BYTES:
        try:
            data = _read_all(fd, size)
        finally:
            os.close(fd)
        if looks_binary(data[:SNIFF_BYTES]):
            raise _binary(shown)
        return _render_whole(data, shown, offset, limit)
    with open(fd, "rb") as raw:
        if looks_binary(raw.read(SNIFF_BYTES)):
            raise _binary(shown)
        raw.seek(0)
        return _render_stream(raw, shown, offset, limit)


def _open_regular(path: Path, shown: str) -> tuple[int, int]:
    """A descriptor open on a regular file, and its size, from one open and one fstat; or an error that
    says what to do.

    O_NONBLOCK keeps the open of a named pipe from blocking; it is refused right after by the fstat.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileNotFoundError(f"{shown} does not exist; use Glob to find the right path") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"{shown} is a directory, not a file; use Glob to list its files") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(f"{shown} is a directory, not a file; use Glob to list its files")
        raise ValueError(f"{shown} is not a regular file (a pipe, socket or device); the text tools handle files only")
    return fd, info.st_size


def _read_all(fd: int, size: int) -> bytes:
    """The whole file behind `fd`: one read when it is `size` bytes long (asking one byte more shows that it
    did not grow), more when it did or when its size was not known (files under /proc report 0)."""
    data = os.read(fd, size + 1)
    if len(data) <= size:
        return data
    parts = [data]
    while chunk := os.read(fd, CHUNK):
        parts.append(chunk)
    return b"".join(parts)


def _binary(shown: str) -> BinaryFileError:
    return BinaryFileError(f"{shown} is a binary file (NUL bytes in its first 8 KB); Read shows text files only")


def _past_end(offset: int, lines: int) -> ValueError:
    return ValueError(f"offset {offset} is past the end of the file ({lines} lines); use an offset from 1 to {max(lines, 1)}")


def _render_whole(data: bytes, shown: str, offset: int, limit: int | None) -> str:
    # Plain UTF-8 after a manual BOM strip: the utf-8-sig codec is written in Python and cost more than the read.
    text = (data[3:] if data.startswith(BOM) else data).decode("utf-8", errors="replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # a final newline ends the last line; it does not start another
    if offset > max(len(lines), 1):
        raise _past_end(offset, len(lines))
    end = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
    selected = lines[offset - 1:end]
    if not selected:
        return truncate(f"{shown}\n", READ_CHARS)  # an empty file: the header line still ends with a newline
    # Each shown line adds at least 4 chars (`\nN. `), so past this many lines the cap is surely reached: only
    # they are numbered; the length of the rest is counted (the marker says how many chars were cut).
    shown_lines = READ_CHARS // 4 + 1
    body = "\n".join(map(operator.add, _numbers(offset, offset - 1 + min(len(selected), shown_lines)),
                          selected[:shown_lines]))
    if len(selected) <= shown_lines:
        return truncate(f"{shown}\n{body}", READ_CHARS)
    total = len(shown) + _prefix_chars(offset, end) + sum(map(len, selected))
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


def _render_stream(raw: BinaryIO, shown: str, offset: int, limit: int | None) -> str:
    text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline=None)
    out = HeadBuffer(READ_CHARS)
    out.add(shown)
    end = None if limit is None else offset - 1 + limit
    lineno, at_start = 0, True
    while not out.full or lineno < offset:  # (a long header can fill a tiny cap before the first line)
        piece = text.readline(CHUNK)  # a whole line, or the next CHUNK chars of a longer one
        if not piece:
            break
        if at_start:
            lineno += 1
            if end is not None and lineno > end:
                break
            if lineno >= offset:
                out.add(f"\n{lineno}. ")
        at_start = piece.endswith("\n")
        if lineno >= offset:
            out.add(piece[:-1] if at_start else piece)
    else:
        _count_rest(text, out, lineno, at_start, end)
        return _finish(out)
    if lineno < offset and offset > 1:
        raise _past_end(offset, lineno)
    if lineno == 0:
        out.add("\n")  # the header line of an empty file still ends with a newline
    return _finish(out)


def _finish(out: HeadBuffer) -> str:
    if out.total <= READ_CHARS:
        return out.text
    return out.text[:READ_CHARS] + truncation_marker(out.total - READ_CHARS)


def _count_rest(text: io.TextIOWrapper, out: HeadBuffer, lineno: int, at_start: bool, end: int | None) -> None:
    """Count, without keeping, the chars the rest of the rendering would have, chunk by chunk at C speed.

    Each char of a line counts 1; each new line adds `\\n` plus its `N. ` prefix; the newline that ends the
    last line (of the file, or of the `limit`) adds nothing.
    """
    while chunk := text.read(CHUNK):
        pos = 0
        if at_start:  # the chunk's first char starts a new line
            lineno += 1
            if end is not None and lineno > end:
                return
            out.count(len(str(lineno)) + 3)
        breaks = chunk.count("\n")
        starts = breaks - (1 if chunk.endswith("\n") else 0)  # breaks followed by more text in this chunk
        if end is not None and lineno + starts > end:
            allowed = end - lineno
            for _ in range(allowed + 1):
                pos = chunk.index("\n", pos) + 1
            out.count(pos - 1 - allowed + _prefix_chars(lineno + 1, end))
            return
        out.count(len(chunk) - breaks + _prefix_chars(lineno + 1, lineno + starts))
        lineno += starts
        at_start = chunk.endswith("\n")


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


READ = Tool(name="Read", description="Read a text file. Returns numbered lines.", args=ReadArgs, run=run_read)
