"""Glob: files matching a pattern, as sorted paths relative to the workdir.

Matching follows Python's `glob(recursive=True)`, which the harness used: `**` spans any number of folders,
`*`, `?` and `[...]` stay inside one name, and a wildcard never matches a name starting with `.` (spell
the dot to reach hidden files). Unlike it, the walk never lists `.git/`, never follows a symlinked folder
(no cycles, no way out of the workdir), and lists a symlinked file only when it points inside the workdir.
It walks with `os.scandir` and prunes folders the pattern cannot reach.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from leaf_cli.tools.args import ToolArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.output import GLOB_LIMIT
from leaf_cli.tools.workspace import Workspace

_MAGIC = re.compile(r"[*?[]")
_STAR_DIRS = r"(?:(?!\.)[^/]+/)*"  # `**/`: zero or more folders whose names do not start with a dot


class GlobArgs(ToolArgs):
    pattern: str = Field(description="Glob pattern, e.g. **/*.py.")
    path: str | None = Field(None, description="Optional directory to search from.")


def run_glob(args: GlobArgs, workspace: Workspace) -> str:
    if not args.pattern:
        raise ValueError("pattern is required, for example **/*.py")
    base = workspace.resolve(args.path or ".")
    if not base.is_dir():
        what = "is not a directory" if base.exists() else "does not exist"
        raise NotADirectoryError(f"path {workspace.display(base)} {what}; give a folder inside the workdir, or omit path")
    literal, rest = _split(args.pattern)
    start = workspace.resolve(str(base.joinpath(*literal))) if literal else base
    if ".git" in start.relative_to(workspace.root).parts:
        return "No files matched."
    if not rest:  # no wildcard: the pattern names one file
        found = [workspace.display(start)] if start.is_file() and not args.pattern.endswith("/") else []
    else:
        found = _walk(start, _Pattern.compile(rest), workspace.root)
    return _listing(found)


def _listing(paths: list[str]) -> str:
    if not paths:
        return "No files matched."
    paths.sort()
    more = len(paths) - GLOB_LIMIT
    return "\n".join(paths[:GLOB_LIMIT]) + (f"\n... {more} more files" if more > 0 else "")


def _split(pattern: str) -> tuple[list[str], list[str]]:
    """Leading wildcard-free components (a folder to start from, confined like any path) and the rest."""
    parts = pattern.split("/")
    literal: list[str] = ["/"] if pattern.startswith("/") else []
    while parts and not _MAGIC.search(parts[0]):
        literal.append(parts.pop(0))
    rest = [p for p in parts if p not in ("", ".")]
    if ".." in rest:
        raise ValueError("'..' is not allowed after a wildcard; put the folder in `path` or before the wildcard")
    literal = [p for p in literal if p]
    if parts and parts[-1] == "":
        return literal, []  # `dir/*/`: matches folders only, so no files
    return literal, rest


@dataclass
class _Pattern:
    parts: list[str]
    part_res: list[re.Pattern[str] | None]  # per component; None for `**`
    full: re.Pattern[str]
    first_star: int  # index of the first `**`, or len(parts)
    dots: bool  # some component starts with a literal dot, so hidden folders may be entered

    @classmethod
    def compile(cls, parts: list[str]) -> _Pattern:
        regexes = [None if p == "**" else re.compile(_component(p)) for p in parts]
        full = ""
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if part == "**":
                full += _STAR_DIRS + (r"(?!\.)[^/]+" if last else "")
            else:
                full += _component(part) + ("" if last else "/")
        star = parts.index("**") if "**" in parts else len(parts)
        return cls(parts, regexes, re.compile(full), star, any(p.startswith(".") for p in parts))

    def enters(self, name: str, index: int) -> bool:
        """Whether a folder called `name`, at component `index`, can hold a match."""
        if index >= self.first_star:
            return self.dots or not name.startswith(".")
        regex = self.part_res[index]
        return index < len(self.parts) - 1 and regex is not None and regex.fullmatch(name) is not None


def _component(part: str) -> str:
    """One path component as a regex: wildcards stay inside the name; no leading-dot match unless spelled."""
    out, i = [], 0
    while i < len(part):
        ch = part[i]
        i += 1
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and (close := part.find("]", i + 1 if part[i:i + 1] in ("!", "]") else i)) != -1:
            body = part[i:close].replace("\\", "\\\\")
            if body.startswith("!"):
                out.append("[^/" + body[1:] + "]")
            else:
                out.append("[" + ("\\" + body if body.startswith("^") else body) + "]")
            i = close + 1
        else:
            out.append(re.escape(ch))
    return ("" if part.startswith(".") else r"(?!\.)") + "".join(out)


def _walk(start: Path, pattern: _Pattern, root: Path) -> list[str]:
    """Paths (relative to `root`) of the files under `start` that match, found with an explicit stack."""
    base = "" if start == root else str(start.relative_to(root)) + "/"
    last = pattern.part_res[-1]
    root_prefix = str(root) + os.sep
    found: list[str] = []
    stack = [(str(start), "", 0)]
    while stack:
        folder, rel, depth = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue  # unreadable or vanished folder: skip it, as glob does
        with entries:
            for entry in entries:
                name = entry.name
                if name == ".git":
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if pattern.enters(name, depth):
                        stack.append((entry.path, rel + name + "/", depth + 1))
                    continue
                if not entry.is_file(follow_symlinks=False):
                    if not entry.is_symlink():
                        continue  # sockets, pipes, devices
                    real = os.path.realpath(entry.path)
                    if not real.startswith(root_prefix) or not os.path.isfile(real):
                        continue  # a link out of the workdir, or to a folder: never followed
                if (last is None or last.fullmatch(name)) and pattern.full.fullmatch(rel + name):
                    found.append(base + rel + name)
    return found


GLOB = Tool(name="Glob", description="Find files by glob pattern.", args=GlobArgs, run=run_glob)
