"""Glob: files matching a pattern, as sorted paths relative to the workdir.

Matching follows Python's `glob(recursive=True)`, which the harness used: `**` spans any number of folders,
`*`, `?` and `[...]` stay inside one name, and a wildcard never matches a name starting with `.` (spell
the dot to reach hidden files). Unlike it, the walk never lists `.git/`, never follows a symlinked folder
(no cycles, no way out of the workdir), and lists a symlinked file only when it points inside the workdir.
It walks with `os.scandir` and prunes folders the pattern cannot reach; folder listings are kept in the
workspace for the rest of the episode and reused while a stat says the folder is unchanged (listing.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from pydantic import Field

from leaf_cli.tools.args import ToolArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.output import GLOB_LIMIT
from leaf_cli.tools.workspace import Workspace

_MAGIC = re.compile(r"[*?[]")
_STAR_DIRS = r"(?:(?!\.)[^/]+/)*"  # `**/`: zero or more folders whose names do not start with a dot
_Selector = Callable[[list[str], list[str]], list[str]]
"""(visible names, dot names) of one folder -> the names that match the pattern's last component."""


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
        return _listing(found, len(found))
    return _listing(*_walk(start, _Pattern.compile(rest), workspace))


def _listing(paths: list[str], total: int) -> str:
    """`paths` (the sorted head of the matches), then how many more matched."""
    if not paths:
        return "No files matched."
    more = total - len(paths)
    return "\n".join(paths) + (f"\n... {more} more files" if more > 0 else "")


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

    def only_name_decides(self) -> bool:
        """True when every component before the last is `**` and no dot is spelled (so no hidden folder is
        entered): then any file the walk reaches matches exactly when its name matches the last component."""
        return all(p == "**" for p in self.parts[:-1]) and not self.dots

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


def _walk(start: Path, pattern: _Pattern, workspace: Workspace) -> tuple[list[str], int]:
    """The first GLOB_LIMIT matching files under `start` in sorted order (relative to the root), and how many
    match in all.

    Folder listings come from the workspace's cache (a stat per folder when nothing changed). Matches are
    kept per folder and only counted; the paths to show are then built by a walk in sorted order that stops
    at the limit, so the 100,000-path sort and string building a whole-tree glob would need never happen.
    """
    root = workspace.root
    base = "" if start == root else str(start.relative_to(root)) + "/"
    select = _name_selector(pattern)
    # With only `**` before the last component, pruning already applies the folder rule: the name decides.
    full_match = None if pattern.only_name_decides() else pattern.full.fullmatch
    enters, listings = pattern.enters, workspace.listings
    root_prefix = str(root) + os.sep
    hits: dict[str, list[str]] = {}  # folder (relative to start, ending in `/` or empty) -> matching names
    subdirs: dict[str, list[str]] = {}  # folder -> the sub-folders the pattern entered
    total = 0
    stack = [(str(start).rstrip("/") + "/", "", 0)]
    while stack:
        folder, rel, depth = stack.pop()
        listing = listings.get(folder)
        if listing is None:
            continue  # unreadable or vanished folder: skip it, as glob does
        entered = [name for name in listing.dirs if enters(name, depth)]
        for name in entered:
            stack.append((folder + name + "/", rel + name + "/", depth + 1))
        names = select(listing.files, listing.hidden)  # may be the listing's own list: never changed in place
        if listing.links:
            names = names + _links(select, folder, listing.links, root_prefix)
        if full_match is not None and names:
            names = [name for name in names if full_match(rel + name)]
        subdirs[rel] = entered
        if names:
            hits[rel] = names
            total += len(names)
    if total <= GLOB_LIMIT:
        found = [base + rel + name for rel, names in hits.items() for name in names]
        found.sort()
        return found, total
    return _first_in_order(hits, subdirs, base), total


def _name_selector(pattern: _Pattern) -> _Selector:
    """The last component's test, as cheap as the component allows: none for `*`, str.endswith for `*.py`,
    its regex otherwise (a regex call per name cost more than the stat per folder of a warm Glob). A component
    without a spelled leading dot never matches a dot name; one with it matches nothing else."""
    last = pattern.parts[-1]
    if last.startswith("."):
        regex = re.compile(_component(last)).fullmatch
        return lambda visible, hidden: list(filter(regex, hidden))
    if last in ("*", "**"):
        return lambda visible, hidden: visible
    if last.startswith("*") and not _MAGIC.search(last[1:]):
        suffix = last[1:]
        return lambda visible, hidden: [name for name in visible if name.endswith(suffix)]
    regex = re.compile(_component(last)).fullmatch
    return lambda visible, hidden: list(filter(regex, visible))


def _links(select: _Selector, folder: str, links: list[str], root_prefix: str) -> list[str]:
    """The symlinks in `folder` whose names match and which point to a file inside the workdir."""
    names = select([n for n in links if n[0] != "."], [n for n in links if n[0] == "."])
    return [name for name in names if _inside_file(folder + name, root_prefix)]


def _inside_file(path: str, root_prefix: str) -> bool:
    """Whether a symlink points to a file inside the workdir (resolved on every Glob: targets change)."""
    real = os.path.realpath(path)
    return real.startswith(root_prefix) and os.path.isfile(real)


def _first_in_order(hits: dict[str, list[str]], subdirs: dict[str, list[str]], base: str) -> list[str]:
    """The first GLOB_LIMIT paths in sorted order, by a depth-first walk over each folder's sorted entries.

    Sorting a folder's file names together with its sub-folder names plus `/` orders the walk exactly as the
    full paths sort: every path below a folder starts with `name/`, and no other entry's name contains `/`.
    """
    def entries(rel: str) -> Iterator[str]:
        return iter(sorted(hits.get(rel, []) + [name + "/" for name in subdirs.get(rel, [])]))

    found: list[str] = []
    stack = [("", entries(""))]
    while stack:
        rel, keys = stack[-1]
        for key in keys:
            if key[-1] == "/":
                stack.append((rel + key, entries(rel + key)))
                break
            found.append(base + rel + key)
            if len(found) == GLOB_LIMIT:
                return found
        else:
            stack.pop()
    return found


GLOB = Tool(name="Glob", description="Find files by glob pattern.", args=GlobArgs, run=run_glob)
