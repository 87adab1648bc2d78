"""The work tree as the file system has it, found by walking it (never following a link), not by asking git.

`git status` and `git add -A` see only what the ignore rules let them see: a folder the agent made with its
own `.gitignore` of `*`, a fresh `git init` folder, a file swapped for a FIFO all stay invisible to them,
so a checkpoint built on them misses what the run created. This walk sees every entry; only the paths that
were ignored when the run started (the user's, recorded then) are left out.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Callable

_SPECIAL_KINDS = ((stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                  (stat.S_ISBLK, "block device"))


@dataclass
class Walk:
    """Relative, '/'-separated paths (str via os.fsdecode, so any byte name round-trips)."""

    files: dict[str, int] = field(default_factory=dict)
    """Regular files and symlinks (what a git tree holds), with their st_mode."""
    specials: dict[str, str] = field(default_factory=dict)
    """FIFOs, sockets and devices, with their kind: git cannot hold them, leaf records them itself."""
    dirs: list[str] = field(default_factory=list)
    """Every folder walked (not the top, nor skipped ones)."""
    repos: list[str] = field(default_factory=list)
    """Folders below the top holding a `.git` entry: nested repositories and submodules (their `.git` is
    not walked: it is a repository's data, recorded as such)."""
    git_dirs: list[str] = field(default_factory=list)
    """Folders that look like a git dir (HEAD, objects/, refs/) and are not one of `keep_git_dirs`: a `.git`
    the agent moved. Not walked: undo moves them aside instead of deleting a repository."""

    def holding(self) -> set[str]:
        """Folders that hold something at some depth (every other walked folder is empty)."""
        held: set[str] = set()
        for rel in [*self.files, *self.specials, *self.repos, *self.git_dirs]:
            parts = rel.split("/")
            held.update("/".join(parts[:i]) for i in range(1, len(parts)))
        return held


def special_kind(mode: int) -> str | None:
    return next((name for test, name in _SPECIAL_KINDS if test(mode)), None)


def looks_like_git_dir(path: str) -> bool:
    """What git itself takes for a git dir: a HEAD file and objects/ and refs/ folders."""
    try:
        return (stat.S_ISREG(os.lstat(os.path.join(path, "HEAD")).st_mode)
                and stat.S_ISDIR(os.lstat(os.path.join(path, "objects")).st_mode)
                and stat.S_ISDIR(os.lstat(os.path.join(path, "refs")).st_mode))
    except OSError:
        return False


def walk(top: str, skip: Callable[[str], bool], keep_git_dirs: frozenset[str] = frozenset(),
         on_repo: Callable[[str], None] | None = None) -> Walk:
    """Every entry under `top` but the top's own `.git` and the paths `skip` names (a folder: its whole
    content). `on_repo(rel)` is called when a nested repository is found, before its content is walked
    (the checkpoint adds that repository's ignored paths to `skip` then)."""
    found = Walk()
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        try:
            entries = sorted(os.scandir(os.path.join(top, rel_dir) if rel_dir else top), key=lambda e: e.name)
        except FileNotFoundError:
            continue  # removed while we walked (only outside a run: the agent's processes are gone by then)
        if rel_dir and any(e.name == ".git" for e in entries):
            found.repos.append(rel_dir)
            if on_repo is not None:
                on_repo(rel_dir)
        for entry in entries:
            if entry.name == ".git":
                continue  # a repository's pointer or data: never content
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if skip(rel):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if rel not in keep_git_dirs and looks_like_git_dir(entry.path):
                    found.git_dirs.append(rel)
                    continue
                found.dirs.append(rel)
                pending.append(rel)
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                found.files[rel] = st.st_mode
            else:
                found.specials[rel] = special_kind(st.st_mode) or "special file"
    return found
