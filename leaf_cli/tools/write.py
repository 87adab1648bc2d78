"""Write: create or replace a whole file, atomically, in the form the file already had.

The observation is FrogNano's: `Wrote PATH (N bytes).` where N counts the characters of `content` (its
harness wrote the text and reported `len(content)`). Parent folders are created as `Path.mkdir(parents=True)`
creates them, so a parent that is a file gives the same OS error.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from pydantic import Field

from leaf_cli.tools.args import CallArgs, LeafArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.textfile import BinaryFileError, TextFile, atomic_write, decode, os_error
from leaf_cli.tools import texts
from leaf_cli.tools.workspace import Workspace
from leaf_cli.tools.output import observed


class WriteArgs(LeafArgs):
    file_path: str = Field(description="Path to write.")
    content: str = Field(description="Full file contents.")


def run_write(args: CallArgs, workspace: Workspace) -> str:
    target = workspace.target(args.path("file_path"))
    content = args.content("content")
    with os_error(target):
        target.real.parent.mkdir(parents=True, exist_ok=True)
        if target.real.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target.real))
        atomic_write(target.real, encode_like(target.real, content, target.shown))
    return texts.wrote(target.shown, len(content))


def encode_like(path: Path, content: str, shown: str) -> bytes:
    """`content` as bytes in the existing file's form: its line endings, BOM and encoding.

    A new file (or one that was binary) is plain UTF-8 as given. A latin-1 file stays latin-1 unless the new
    content holds characters latin-1 cannot encode: Write replaces the whole file, so then it becomes UTF-8.
    """
    if not path.is_file():
        return content.encode("utf-8")
    try:
        old = decode(path.read_bytes(), shown)
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
