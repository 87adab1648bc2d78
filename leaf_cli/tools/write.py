"""Write: create or replace a whole file, atomically, in the form the file already had.

The observation is FrogNano's: `Wrote PATH (N bytes).` where N counts the characters of `content` (its
harness wrote the text and reported `len(content)`). Parent folders are created as `Path.mkdir(parents=True)`
creates them, so a parent that is a file gives the same OS error.
"""

from __future__ import annotations

import errno
import os
import stat

from pydantic import Field

from leaf_cli.tools.args import CallArgs, LeafArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.beneath import Place, open_file_flags
from leaf_cli.tools.textfile import BinaryFileError, TextFile, decode, os_error, write_place
from leaf_cli.tools import texts
from leaf_cli.tools.workspace import Workspace
from leaf_cli.tools.output import observed


class WriteArgs(LeafArgs):
    file_path: str = Field(description="Path to write.")
    content: str = Field(description="Full file contents.")


def run_write(args: CallArgs, workspace: Workspace) -> str:
    target = workspace.target(args.path("file_path"))
    content = args.content("content")
    with os_error(target), workspace.place(target, create_dirs=True, write=True) as place:
        if _is_dir(place):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target.real))
        write_place(place, encode_like(place, content, target.shown))
    return texts.wrote(target.shown, len(content))


def _is_dir(place: Place) -> bool:
    """A folder at `place` (through a symlink only at a plain path: beneath a root the walk followed them)."""
    try:
        info = os.stat(place.name or ".", dir_fd=place.dir_fd, follow_symlinks=place.dir_fd is None)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode)


def _old_bytes(place: Place) -> bytes | None:
    """The bytes of the regular file at `place`, or None when there is none (new, a folder, a pipe)."""
    try:
        fd = os.open(place.name, open_file_flags(place, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC),
                     dir_fd=place.dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, place.real) from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read()


def encode_like(place: Place, content: str, shown: str) -> bytes:
    """`content` as bytes in the existing file's form: its line endings, BOM and encoding.

    A new file (or one that was binary) is plain UTF-8 as given. A latin-1 file stays latin-1 unless the new
    content holds characters latin-1 cannot encode: Write replaces the whole file, so then it becomes UTF-8.
    """
    data = _old_bytes(place)
    if data is None:
        return content.encode("utf-8")
    try:
        old = decode(data, shown)
    except BinaryFileError:
        return content.encode("utf-8")
    text = old.with_newlines(content)
    if old.bom and text.startswith("\ufeff"):
        text = text[1:]  # the model copied the BOM into the text: write it once
    try:
        return old.encode(text)
    except UnicodeEncodeError:
        return TextFile(text=text, bom=old.bom).encode(text)


WRITE = Tool(
    name="Write",
    description="Write a complete file, creating parent directories when needed.",
    args=WriteArgs,
    run=observed(run_write),
)
