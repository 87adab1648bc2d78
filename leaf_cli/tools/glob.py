"""Glob: files matching a pattern, as sorted paths relative to the workdir.

The result is that of FrogNano's harness: Python's `glob(str(Path(path) / pattern), recursive=True)`, files
only (symlinks followed), each shown by its resolved path relative to the workdir (else as glob gave it),
sorted, at most 1,000 then `... K more files`; `No files matched.` also for a missing or non-folder `path`.
So `**` spans folders, wildcards stay inside a name and never match a leading dot, a spelled `.git/…` is
listed, a trailing slash is dropped as `pathlib` drops it, and symlinked folders are followed.

Most patterns take a fast walk that gives the same answer: `os.scandir` with pruning, folder listings kept
in the workspace for the episode and reused while a stat says the folder is unchanged (listing.py). A
pattern that spells a dot name or `..`, has two `**`, reaches outside the workdir, or meets a symlink on
the way is answered by `glob` itself. A confined workspace (`leaf fix`) always takes the walk, which stays
inside: a pattern that starts outside is refused, symlinked folders are not entered, and every folder is opened
from its parent's descriptor without following a symlink (beneath.py), so one swapped in while the walk runs
never lists a folder outside. `.git` is treated as the harness's glob treats it, confined or not: a dot name,
so `.git/*` and `.git/**/HEAD` list its files while `**/*` never enters it. A name that is not UTF-8 shows its
bad bytes as U+FFFD (`output.observed`), as there.
"""

from __future__ import annotations

import errno
import glob as globlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from pydantic import Field

from leaf_cli.tools.args import CallArgs, LeafArgs
from leaf_cli.tools.base import Tool, ToolFailure
from leaf_cli.tools.output import GLOB_LIMIT, observed
from leaf_cli.tools import texts
from leaf_cli.tools.beneath import LIST_FLAGS, Escape, Place, open_dir_at, walk
from leaf_cli.tools.workspace import OutsideWorkspaceError, Target, Workspace

_MAGIC = re.compile(r"[*?[]")
_STAR_DIRS = r"(?:(?!\.)[^/]+/)*"  # `**/`: zero or more folders whose names do not start with a dot
_Selector = Callable[[list[str], list[str]], list[str]]
"""(visible names, dot names) of one folder -> the names that match the pattern's last component."""


class GlobArgs(LeafArgs):
    pattern: str = Field(description="Glob pattern, e.g. **/*.py.")
    path: str | None = Field(None, description="Optional directory to search from.")


class _Fallback(Exception):
    """The fast walk cannot promise glob's answer for this pattern or tree."""


def run_glob(args: CallArgs, workspace: Workspace) -> str:
    pattern = args.text("pattern")
    if not pattern:
        raise ValueError(texts.REQUIRED.format(key="pattern"))
    base = workspace.target(args.get("path") or ".")
    full = base.given / pattern  # pathlib's join: an absolute pattern replaces the base, `a//b/` is `a/b`
    literal, rest = _split(str(full))
    if workspace.confined and ".." in rest:
        raise OutsideWorkspaceError(texts.DOTDOT_AFTER_WILDCARD.format(pattern=pattern))
    try:
        return _listing(*_fast(literal, rest, workspace))
    except _Fallback:
        return _listing(*_with_glob(str(full), workspace))


def _with_glob(pattern: str, workspace: Workspace) -> tuple[list[str], int]:
    """Python's glob, as the harness ran it (unconfined workspaces only).

    A symlink loop under a `**` would make glob walk it to the OS's limit (and two loops for ever: the
    harness hung there), so one is reported instead, as the OS words it.
    """
    if "**" in pattern:
        start, _ = _split(pattern)
        loop = _symlink_loop(os.path.join("/", *start))
        if loop is not None:
            raise ToolFailure("OSError", f"[Errno {errno.ELOOP}] {os.strerror(errno.ELOOP)}: '{loop}'")
    found = (m for m in globlib.glob(pattern, recursive=True) if os.path.isfile(m))
    matches = sorted(workspace.shown(Path(m)) for m in found)
    return matches[:GLOB_LIMIT], len(matches)


def _symlink_loop(start: str) -> str | None:
    """A symlink under `start` (folders followed through symlinks, as glob follows them) that leads back to
    a folder it lies in, or None. A depth-first walk over real folders: a folder met again while it is
    still being walked closes a loop; one already walked is not walked twice."""
    walking: set[tuple[int, int]] = set()
    done: set[tuple[int, int]] = set()

    def visit(folder: str) -> str | None:
        try:
            info = os.stat(folder)
        except OSError:
            return None
        key = (info.st_dev, info.st_ino)
        if key in done:
            return None
        walking.add(key)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            entries = []
        for entry in entries:
            try:
                if not entry.is_dir():
                    continue
                target = os.stat(entry.path)
            except OSError:
                continue
            if (target.st_dev, target.st_ino) in walking:
                return entry.path
            found = visit(entry.path)
            if found is not None:
                return found
        walking.discard(key)
        done.add(key)
        return None

    return visit(start)


def _inside(real: str, workspace: Workspace) -> bool:
    root = str(workspace.root)
    return real == root or real.startswith(root.rstrip("/") + "/")


def _fast(literal: list[str], rest: list[str], workspace: Workspace) -> tuple[list[str], int]:
    """The walk's answer. Unconfined, only when it is sure to be glob's (else _Fallback). Confined, always:
    it never enters a symlinked folder, and lists a symlinked file only when it points inside."""
    start_text = os.path.join("/", *literal)
    if workspace.confined:
        return _confined(start_text, rest, workspace)
    if (".." in literal or rest.count("**") > 1 or any(p.startswith(".") for p in literal + rest)
            or not _inside(start_text, workspace) or os.path.realpath(start_text) != start_text):
        raise _Fallback  # glob's own answer: dot names, `..`, a file reached twice, outside, a symlinked start
    start = Path(start_text)
    if not rest:  # no wildcard: the pattern names one file
        return ([workspace.shown(start)], 1) if start.is_file() else ([], 0)
    if not start.is_dir():
        return [], 0
    return _walk(start_text, None, _Pattern.compile(rest), workspace)


def _confined(start_text: str, rest: list[str], workspace: Workspace) -> tuple[list[str], int]:
    """A confined Glob: the start folder reached by the walk beneath the root (beneath.py), every folder below
    it opened from its parent's descriptor, so a symlink swapped in never leads the listing out of the tree."""
    checked = workspace.resolve(start_text)  # the courtesy: a start outside is refused with its reason
    target = Target(checked, checked, workspace.display(checked), start_text)
    try:
        place = workspace.place(target)
    except OSError:
        return [], 0  # a missing or non-folder start matches nothing, as in glob
    with place:
        if not rest:  # no wildcard: the pattern names one file
            return ([workspace.display(Path(place.real))], 1) if _regular_at(place) else ([], 0)
        try:
            fd = open_dir_at(place)
        except OSError:
            return [], 0
    return _walk(place.real, fd, _Pattern.compile(rest), workspace)


def _regular_at(place: Place) -> bool:
    try:
        return stat.S_ISREG(os.stat(place.name or ".", dir_fd=place.dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _listing(paths: list[str], total: int) -> str:
    """`paths` (the sorted head of the matches), then how many more matched."""
    if not paths:
        return texts.NO_FILES
    more = total - len(paths)
    return "\n".join(paths) + (texts.more_files(more) if more > 0 else "")


def _split(pattern: str) -> tuple[list[str], list[str]]:
    """An absolute pattern's leading wildcard-free components (the folder to start from) and the rest."""
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    literal: list[str] = []
    while parts and not _MAGIC.search(parts[0]):
        literal.append(parts.pop(0))
    return literal, parts


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


class _Folder:
    """An open folder of a confined walk, kept open until every sub-folder it holds has been opened from it."""

    __slots__ = ("fd", "left")

    def __init__(self, fd: int, left: int) -> None:
        self.fd, self.left = fd, left


def _walk(start: str, start_fd: int | None, pattern: _Pattern, workspace: Workspace) -> tuple[list[str], int]:
    """The first GLOB_LIMIT matching files under `start` in sorted order (relative to the root), and how many
    match in all. `start_fd` (confined, owned by the walk) is the start's descriptor: then each folder is
    opened from its parent's, never by name.

    Folder listings come from the workspace's cache (a stat per folder when nothing changed). Matches are
    kept per folder and only counted; the paths to show are then built by a walk in sorted order that stops
    at the limit, so the 100,000-path sort and string building a whole-tree glob would need never happen.
    """
    root = str(workspace.root)
    base = "" if start == root else start[len(root.rstrip("/")) + 1:] + "/"
    select = _name_selector(pattern)
    # With only `**` before the last component, pruning already applies the folder rule: the name decides.
    full_match = None if pattern.only_name_decides() else pattern.full.fullmatch
    enters, listings = pattern.enters, workspace.listings
    hits: dict[str, list[str]] = {}  # folder (relative to start, ending in `/` or empty) -> matching names
    subdirs: dict[str, list[str]] = {}  # folder -> the sub-folders the pattern entered
    total = 0
    root_prefix = root.rstrip("/") + os.sep
    stack: list[tuple[_Folder | None, str, str, str, int]] = [(None, "", start.rstrip("/") + "/", "", 0)]
    opened: list[_Folder] = []
    ready = start_fd
    try:
        while stack:
            parent, name, folder, rel, depth = stack.pop()
            if parent is None:  # the start (its descriptor, when confined), or any folder when not
                fd, ready = ready, None
            else:
                fd = _open_child(parent, name)
                if fd is None:
                    continue  # vanished, unreadable, or swapped for a symlink: skipped, as glob skips it
            listing = listings.get(folder, fd)
            entered = [] if listing is None else [name for name in listing.dirs if enters(name, depth)]
            me = None
            if fd is not None:
                me = _Folder(fd, len(entered) or 1)
                opened.append(me)
            for sub in entered:
                stack.append((me, sub, folder + sub + "/", rel + sub + "/", depth + 1))
            if me is not None and not entered:
                _release(me)
            if listing is None:
                continue  # unreadable or vanished folder: skip it, as glob does
            names = select(listing.files, listing.hidden)  # may be the listing's own list: never changed in place
            if listing.links:
                if not workspace.confined:
                    raise _Fallback  # glob follows symlinks, and shows each by its resolved path
                names = names + _links(select, folder, listing.links, root_prefix)
            if full_match is not None and names:
                names = [name for name in names if full_match(rel + name)]
            subdirs[rel] = entered
            if names:
                hits[rel] = names
                total += len(names)
    finally:
        for held in opened:
            if held.left > 0:
                held.left = 0
                os.close(held.fd)
    if total <= GLOB_LIMIT:
        found = [base + rel + name for rel, names in hits.items() for name in names]
        found.sort()
        return found, total
    return _first_in_order(hits, subdirs, base), total


def _open_child(parent: _Folder, name: str) -> int | None:
    """Folder `name` opened from `parent`'s descriptor (O_NOFOLLOW), which is closed once its last child is."""
    try:
        return os.open(name, LIST_FLAGS, dir_fd=parent.fd)
    except OSError:
        return None
    finally:
        _release(parent)


def _release(folder: _Folder) -> None:
    folder.left -= 1
    if folder.left == 0:
        os.close(folder.fd)


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
    """Confined: the symlinks in `folder` whose names match and which point to a file inside the workdir
    (symlinked folders are not entered, so the walk never leaves it)."""
    names = select([n for n in links if n[0] != "."], [n for n in links if n[0] == "."])
    return [name for name in names if _inside_file(folder + name, root_prefix)]


def _inside_file(path: str, root_prefix: str) -> bool:
    """Whether a symlink points to a file inside the workdir, walked beneath the root (targets change, so on
    every Glob). Only the link's name is listed: what it points to is never read here."""
    try:
        with walk(root_prefix.rstrip("/") or "/", path[len(root_prefix):].split("/")) as place:
            return _regular_at(place)
    except (Escape, OSError):
        return False


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


GLOB = Tool(name="Glob", description="Find files by glob pattern.", args=GlobArgs, run=observed(run_glob))
