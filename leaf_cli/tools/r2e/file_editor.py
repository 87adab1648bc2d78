"""`file_editor`: the R2E-Gym / SWE-agent style multi-command editor (view, create, str_replace, insert,
undo_edit). Observation texts are leaf's own wording; paths stay confined to the workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from leaf_cli.tools.args import ToolArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.output import READ_CHARS, truncate
from leaf_cli.tools.textfile import atomic_write, load
from leaf_cli.tools.workspace import Workspace

SNIPPET_CONTEXT = 4
"""Lines shown above and below an edit so the model can check it."""
UNDO_DEPTH = 20


class FileEditorArgs(ToolArgs):
    command: Literal["view", "create", "str_replace", "insert", "undo_edit"] = Field(
        description="One of: view, create, str_replace, insert, undo_edit.")
    path: str = Field(description="File or directory path, relative to the repository root or absolute.")
    file_text: str | None = Field(None, description="create: the whole content of the new file.")
    old_str: str | None = Field(None, description="str_replace: the exact text to replace (must occur once).")
    new_str: str | None = Field(None, description="str_replace: the replacement; insert: the text to insert.")
    insert_line: int | None = Field(None, description="insert: the line after which new_str goes (0 = top of file).")
    view_range: list[int] | None = Field(None, description="view: [first, last] line numbers; last -1 = to the end.")


def run_file_editor(args: FileEditorArgs, workspace: Workspace) -> str:
    path = workspace.resolve(args.path)
    shown = workspace.display(path)
    if args.command == "view":
        return _view_dir(path, shown, workspace) if path.is_dir() else _view_file(path, shown, args.view_range)
    if args.command == "create":
        return _create(path, shown, args.file_text, workspace)
    if args.command == "str_replace":
        return _replace(path, shown, args.old_str, args.new_str or "", workspace)
    if args.command == "insert":
        return _insert(path, shown, args.insert_line, args.new_str, workspace)
    return _undo(path, shown, workspace)


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(lines, first))


def _view_file(path: Path, shown: str, view_range: list[int] | None) -> str:
    lines = load(path, shown).text.splitlines()
    first, last = 1, len(lines)
    if view_range is not None:
        if len(view_range) != 2:
            raise ValueError("view_range takes two numbers: [first_line, last_line]")
        first, last = view_range[0], (len(lines) if view_range[1] == -1 else view_range[1])
        if not 1 <= first <= max(1, len(lines)) or last < first:
            raise ValueError(f"view_range {view_range} is outside {shown}, which has {len(lines)} lines")
        last = min(last, len(lines))
    header = f"[{shown}: lines {first}-{last} of {len(lines)}]\n"
    return truncate(header + _numbered(lines[first - 1:last], first), READ_CHARS)


def _view_dir(path: Path, shown: str, workspace: Workspace) -> str:
    """Two levels of the tree, hidden entries left out."""
    entries = []
    for child in sorted(path.iterdir()):
        if child.name.startswith("."):
            continue
        entries.append(workspace.display(child) + ("/" if child.is_dir() else ""))
        if child.is_dir():
            entries += [workspace.display(g) + ("/" if g.is_dir() else "")
                        for g in sorted(child.iterdir()) if not g.name.startswith(".")]
    body = "\n".join(entries) if entries else "(empty)"
    return truncate(f"[{shown}: directory listing, two levels, hidden entries skipped]\n{body}", READ_CHARS)


def _history(workspace: Workspace) -> dict[Path, list[bytes | None]]:
    """Earlier contents per file, kept on the episode's Workspace object (so each episode has its own)."""
    history = getattr(workspace, "_r2e_undo", None)
    if history is None:
        history = {}
        setattr(workspace, "_r2e_undo", history)
    return history


def _remember(path: Path, workspace: Workspace) -> None:
    stack = _history(workspace).setdefault(path, [])
    stack.append(path.read_bytes() if path.exists() else None)
    del stack[:-UNDO_DEPTH]


def _create(path: Path, shown: str, text: str | None, workspace: Workspace) -> str:
    if text is None:
        raise ValueError("create needs file_text, the content of the new file")
    if path.exists():
        raise FileExistsError(f"{shown} already exists; change it with str_replace or insert")
    path.parent.mkdir(parents=True, exist_ok=True)
    _remember(path, workspace)
    atomic_write(path, text.encode("utf-8"))
    return f"Created {shown} ({len(text.splitlines())} lines)."


def _snippet(shown: str, text: str, start: int, count: int, verb: str) -> str:
    lines = text.splitlines()
    first = max(1, start - SNIPPET_CONTEXT)
    last = min(len(lines), start + count - 1 + SNIPPET_CONTEXT)
    return (f"{verb} {shown}. Lines {first}-{last} now read:\n{_numbered(lines[first - 1:last], first)}\n"
            "Check the result; use undo_edit to revert it.")


def _replace(path: Path, shown: str, old: str | None, new: str, workspace: Workspace) -> str:
    if not old:
        raise ValueError("str_replace needs old_str, the exact text to replace")
    file = load(path, shown)
    count = file.text.count(old)
    if count == 0:
        raise ValueError(f"old_str does not occur in {shown}; view the file and copy the text exactly")
    if count > 1:
        lines = [file.text[:i].count("\n") + 1 for i in _positions(file.text, old)]
        raise ValueError(f"old_str occurs {count} times in {shown} (lines {lines}); include more context so it is unique")
    at = file.text.index(old)
    updated = file.text.replace(old, new, 1)
    _remember(path, workspace)
    atomic_write(path, file.encode(updated))
    return _snippet(shown, updated, file.text[:at].count("\n") + 1, new.count("\n") + 1, "Edited")


def _positions(text: str, part: str) -> list[int]:
    found, at = [], text.find(part)
    while at != -1:
        found.append(at)
        at = text.find(part, at + 1)
    return found


def _insert(path: Path, shown: str, line: int | None, new: str | None, workspace: Workspace) -> str:
    if line is None or new is None:
        raise ValueError("insert needs insert_line and new_str")
    file = load(path, shown)
    lines = file.text.splitlines(keepends=True)
    if not 0 <= line <= len(lines):
        raise ValueError(f"insert_line {line} is outside {shown}, which has {len(lines)} lines (0 inserts at the top)")
    block = new if new.endswith("\n") else new + "\n"
    if line and not lines[line - 1].endswith("\n"):
        lines[line - 1] += "\n"
    updated = "".join(lines[:line]) + block + "".join(lines[line:])
    _remember(path, workspace)
    atomic_write(path, file.encode(updated))
    return _snippet(shown, updated, line + 1, block.count("\n"), "Inserted into")


def _undo(path: Path, shown: str, workspace: Workspace) -> str:
    stack = _history(workspace).get(path)
    if not stack:
        raise ValueError(f"no edit of {shown} to undo")
    previous = stack.pop()
    if previous is None:
        path.unlink()
        return f"Undid the creation of {shown}; the file is gone."
    atomic_write(path, previous)
    return f"Undid the last edit of {shown}; it is back to its previous content."


FILE_EDITOR = Tool(
    name="file_editor",
    description=("View, create and edit files. Commands: `view` (a file with line numbers, or a directory two "
                 "levels deep), `create` (a new file from file_text), `str_replace` (replace old_str, which must "
                 "occur exactly once, by new_str), `insert` (new_str after line insert_line), `undo_edit` (revert "
                 "the last change to the file)."),
    args=FileEditorArgs, run=run_file_editor,
)
