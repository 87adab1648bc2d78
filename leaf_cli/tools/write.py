"""Write: create or replace a whole file, atomically, in the form the file already had."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from leaf_cli.tools.args import ToolArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.textfile import BinaryFileError, TextFile, atomic_write, decode
from leaf_cli.tools.workspace import Workspace


class WriteArgs(ToolArgs):
    path_alias = "file_path"

    file_path: str = Field(description="Path to write.")
    content: str = Field(description="Full file contents.")


def run_write(args: WriteArgs, workspace: Workspace) -> str:
    path = workspace.resolve(args.file_path)
    shown = workspace.display(path)
    if path.is_dir():
        raise IsADirectoryError(f"{shown} is a directory; give the path of a file to write")
    data = encode_like(path, args.content, shown)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)
    return f"Wrote {shown} ({len(data)} bytes)."


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
    run=run_write,
)
