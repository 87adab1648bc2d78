"""Unified diffs TaskPilot writes itself (bug patches and their reverse), in `git apply` form."""

from __future__ import annotations

import difflib


def file_diff(path: str, old: str, new: str) -> str:
    """A git-style diff of one file from `old` to `new` text (no-newline-at-end handled)."""
    if old == new:
        return ""
    out = [f"diff --git a/{path} b/{path}\n"]
    for line in difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                     f"a/{path}", f"b/{path}", n=3):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def changed_lines(old: str, new: str) -> list[str]:
    """The stripped source lines removed or added between `old` and `new` (the leak filter's secrets)."""
    lines = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line[:1] in "+-" and not line.startswith(("+++", "---")) and line[1:].strip():
            lines.append(line[1:].strip())
    return lines
