"""Read: a text file as numbered lines, `N. text`, under a header line naming the file.

Lines are split at `\\n`, `\\r\\n` and `\\r` (the harness's splitlines, without its rarer separators such as
form feed, so numbers agree with `grep -n`). Small files are decoded in one go; large ones stream, so a
`limit` never reads past the lines it shows and a whole-file read of a huge file keeps only the head.
"""

from __future__ import annotations

import io
import os
from typing import BinaryIO

from pydantic import Field

from leaf_cli.tools.args import ToolArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.output import READ_CHARS, HeadBuffer, truncate, truncation_marker
from leaf_cli.tools.textfile import SNIFF_BYTES, BinaryFileError, looks_binary, require_regular
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
    if path.is_dir():
        raise IsADirectoryError(f"{shown} is a directory, not a file; use Glob to list its files")
    if not path.exists():
        raise FileNotFoundError(f"{shown} does not exist; use Glob to find the right path")
    # As in the harness: an offset below 1 means 1, a limit of 0 or less means "to the end".
    offset = max(1, args.offset or 1)
    limit = args.limit if args.limit and args.limit > 0 else None
    require_regular(path, shown)  # before open: opening a named pipe would block
    with open(path, "rb") as raw:
        info = os.fstat(raw.fileno())
        if looks_binary(raw.read(SNIFF_BYTES)):
            raise BinaryFileError(f"{shown} is a binary file (NUL bytes in its first 8 KB); Read shows text files only")
        raw.seek(0)
        if info.st_size <= WHOLE_FILE_BYTES:
            return _render_whole(raw.read(), shown, offset, limit)
        return _render_stream(raw, shown, offset, limit)


def _past_end(offset: int, lines: int) -> ValueError:
    return ValueError(f"offset {offset} is past the end of the file ({lines} lines); use an offset from 1 to {max(lines, 1)}")


def _render_whole(data: bytes, shown: str, offset: int, limit: int | None) -> str:
    text = data.decode("utf-8-sig", errors="replace")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()  # a final newline ends the last line; it does not start another
    if offset > max(len(lines), 1):
        raise _past_end(offset, len(lines))
    end = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
    body = "\n".join(map("{}. {}".format, range(offset, end + 1), lines[offset - 1:end]))
    return truncate(f"{shown}\n{body}", READ_CHARS)


def _render_stream(raw: BinaryIO, shown: str, offset: int, limit: int | None) -> str:
    text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline=None)
    out = HeadBuffer(READ_CHARS)
    out.add(shown)
    end = None if limit is None else offset - 1 + limit
    lineno, at_start = 0, True
    while not out.full:
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
