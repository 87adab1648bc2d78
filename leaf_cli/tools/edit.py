"""Edit: replace an exact string in a text file; any failure leaves the file byte-identical.

Checks and messages in the order of FrogNano's harness: the path, a non-empty `old_string`, the file (its OS
error when missing), then the count: `old_string was not found`, or `old_string matched N times; …` unless
`replace_all`. An `old_string` equal to `new_string` is an edit like any other there, and here. Unlike the
harness, which decoded with replacement and wrote UTF-8 back (corrupting a latin-1 file and any binary
one), the file keeps its encoding, BOM and line endings, and a binary file is refused.
"""

from __future__ import annotations

from pydantic import Field

from leaf_cli.tools.args import CallArgs, LeafArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.textfile import TextFile, convert_newlines, load_target, os_error, write_place
from leaf_cli.tools import texts
from leaf_cli.tools.workspace import Workspace
from leaf_cli.tools.output import observed


class EditArgs(LeafArgs):
    file_path: str = Field(description="Path to edit.")
    old_string: str = Field(description="Exact text to replace.")
    new_string: str = Field(description="Replacement text.")
    replace_all: bool = Field(False, description="Replace every occurrence instead of requiring one match.")


def run_edit(args: CallArgs, workspace: Workspace) -> str:
    target = workspace.target(args.path("file_path"))
    old_string, new_string = args.text("old_string"), args.text("new_string")
    if not old_string:
        raise ValueError(texts.OLD_STRING_EMPTY)
    file = load_target(target, workspace)
    old, count = _match(file, old_string)
    replace_all = args.truthy("replace_all")
    if count == 0:
        raise ValueError(texts.OLD_STRING_NOT_FOUND)
    if count != 1 and not replace_all:
        raise ValueError(texts.OLD_STRING_MANY.format(count=count))
    changed = count if replace_all else 1
    if old_string != new_string:
        new = convert_newlines(new_string, _ending(old, file))
        updated = file.text.replace(old, new) if replace_all else file.text.replace(old, new, 1)
        try:
            data = file.encode(updated)
        except UnicodeEncodeError:
            data = TextFile(text=updated, bom=file.bom).encode(updated)  # latin-1 cannot hold it: UTF-8 then
        with os_error(target), workspace.place(target, write=True) as place:
            write_place(place, data)
    return texts.edited(target.shown, changed)


def _match(file: TextFile, old: str) -> tuple[str, int]:
    """The form of `old` found in the file, and how often: as sent, then with the file's line endings."""
    for candidate in dict.fromkeys([old, file.with_newlines(old)]):
        count = file.text.count(candidate)
        if count:
            return candidate, count
    return old, 0


def _ending(matched: str, file: TextFile) -> str | None:
    """The line ending new text takes: that of the text it replaces, else the file's usual one."""
    if "\r\n" in matched:
        return "\r\n"
    if "\n" in matched:
        return "\n"
    return file.newline


EDIT = Tool(name="Edit", description="Replace an exact string in a text file.", args=EditArgs, run=observed(run_edit))
