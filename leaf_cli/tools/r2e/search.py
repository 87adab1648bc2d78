"""`search`: find a literal string in a file or under a directory, R2E-Gym style (files with match counts,
or numbered matching lines for one file). Hidden folders and binary files are skipped."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from leaf_cli.tools.args import ToolArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.output import READ_CHARS, truncate
from leaf_cli.tools.textfile import BinaryFileError, decode
from leaf_cli.tools.workspace import Workspace

MAX_FILES = 100
"""Past this many matching files the search asks for a narrower term instead of listing them."""


class SearchArgs(ToolArgs):
    search_term: str = Field(description="The literal text to look for.")
    path: str | None = Field(None, description="File or directory to search; the repository root when omitted.")


def run_search(args: SearchArgs, workspace: Workspace) -> str:
    if not args.search_term:
        raise ValueError("search_term is empty")
    path = workspace.resolve(args.path or ".")
    shown = workspace.display(path)
    if path.is_file():
        return _in_file(path, shown, args.search_term)
    if not path.is_dir():
        raise FileNotFoundError(f"{shown} does not exist")
    hits = [(workspace.display(f), n) for f in _files(path) if (n := _count(f, args.search_term))]
    if not hits:
        return f'No matches for "{args.search_term}" under {shown}.'
    total = sum(n for _, n in hits)
    if len(hits) > MAX_FILES:
        return (f'"{args.search_term}" occurs {total} times in {len(hits)} files under {shown}: too many to list; '
                "use a more specific term or path.")
    listing = "\n".join(f"{name}: {n} match{'es' if n != 1 else ''}" for name, n in sorted(hits))
    return f'"{args.search_term}" occurs {total} times in {len(hits)} files under {shown}:\n{listing}'


def _files(root: Path):  # noqa: ANN202 - a generator of paths
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(folder) / name


def _text(path: Path) -> str | None:
    try:
        return decode(path.read_bytes(), str(path)).text
    except (BinaryFileError, OSError):
        return None


def _count(path: Path, term: str) -> int:
    text = _text(path)
    return text.count(term) if text else 0


def _in_file(path: Path, shown: str, term: str) -> str:
    text = _text(path)
    if text is None:
        raise ValueError(f"{shown} is not a readable text file")
    lines = [f"{n:6d}\t{line}" for n, line in enumerate(text.splitlines(), 1) if term in line]
    if not lines:
        return f'No matches for "{term}" in {shown}.'
    return truncate(f'"{term}" is on {len(lines)} lines of {shown}:\n' + "\n".join(lines), READ_CHARS)


SEARCH = Tool(
    name="search",
    description="Search for a literal string: in one file (matching lines) or under a directory (files and counts).",
    args=SearchArgs, run=run_search,
)
