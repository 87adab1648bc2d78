"""Edit: replace an exact string in a text file; any failure leaves the file byte-identical."""

from __future__ import annotations

from pydantic import Field

from leaf_cli.tools.args import ToolArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.textfile import TextFile, atomic_write, convert_newlines, load
from leaf_cli.tools.workspace import Workspace


class EditArgs(ToolArgs):
    path_alias = "file_path"

    file_path: str = Field(description="Path to edit.")
    old_string: str = Field(description="Exact text to replace.")
    new_string: str = Field(description="Replacement text.")
    replace_all: bool = Field(False, description="Replace every occurrence instead of requiring one match.")


def run_edit(args: EditArgs, workspace: Workspace) -> str:
    if not args.old_string:
        raise ValueError("old_string must be non-empty; quote the exact text to replace (use Write for a new file)")
    if args.old_string == args.new_string:
        raise ValueError("old_string and new_string are identical, so the edit would change nothing")
    path = workspace.resolve(args.file_path)
    shown = workspace.display(path)
    file = load(path, shown)
    old, count = _match(file, args.old_string)
    if count == 0:
        raise ValueError(f"old_string was not found in {shown}; Read the file and copy the text exactly, "
                         f"indentation included{_encoding_hint(file, args.old_string)}")
    if count > 1 and not args.replace_all:
        raise ValueError(f"old_string matched {count} times; set replace_all=true or use a more specific old_string "
                         "(include surrounding lines)")
    new = convert_newlines(args.new_string, _ending(old, file))
    updated = file.text.replace(old, new) if args.replace_all else file.text.replace(old, new, 1)
    try:
        data = file.encode(updated)
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end]
        raise ValueError(f"{shown} is a latin-1 file and new_string holds characters latin-1 cannot encode "
                         f"({bad!r}); use latin-1 characters only, or rewrite the whole file with Write") from None
    atomic_write(path, data)
    changed = count if args.replace_all else 1
    return f"Edited {shown} ({changed} replacement{'s' if changed != 1 else ''})."


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


def _encoding_hint(file: TextFile, old: str) -> str:
    if file.encoding == "latin-1" and "\ufffd" in old:
        return ("; the file is latin-1, not UTF-8, so Read showed some of its characters as \ufffd: "
                "choose an old_string without them")
    return ""


EDIT = Tool(name="Edit", description="Replace an exact string in a text file.", args=EditArgs, run=run_edit)
