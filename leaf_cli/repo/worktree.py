"""What a git tree cannot hold about a work tree, recorded beside the checkpoint and put back by undo.

Git keeps two file modes (644 and 755) and no folders, and knows nothing of ignored files; so a 0600 key
would come back 0644, an empty folder would vanish, and an undo that deletes "everything the recorded
tree lacks" would delete the user's ignored `.env` once the agent un-ignored it. This module records, from
the checkpoint's file-system walk, the exact permission bits of files that differ from what a checkout
would give them, the empty folders, the paths ignored at the start (git's view then, each repository's
own), and the folders that looked like a git dir then; and applies them on restore.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Mapping

from pydantic import BaseModel, Field

from leaf_cli.repo.git import git
from leaf_cli.repo.walk import Walk

_FILE = "worktree.json"


class WorktreeExtras(BaseModel):
    umask: int = Field(0o022, description="The umask at record time: what a checkout gives a new file.")
    modes: dict[str, int] = Field(default_factory=dict, description="Files whose permission bits a checkout would not give back.")
    empty_dirs: list[str] = Field(default_factory=list, description="Empty folders (untracked, not ignored), each ending with '/'.")
    ignored: list[str] = Field(default_factory=list, description="Ignored paths; a wholly ignored folder ends with '/'.")
    git_dirs: list[str] = Field(default_factory=list, description="Folders that looked like a git dir at record time (content, not moved aside).")

    def was_ignored(self, rel: str) -> bool:
        """Whether `rel` was (under) an ignored path when the run started: the user's, never to delete."""
        if rel in self._ignored_set:
            return True
        parts = rel.split("/")
        return any("/".join(parts[:i]) + "/" in self._ignored_set for i in range(1, len(parts) + 1))

    def skips(self, rel: str) -> bool:
        """For the walk: `rel` was ignored at record time (a folder's content is then not walked either)."""
        return rel in self._ignored_set or rel + "/" in self._ignored_set

    @property
    def _ignored_set(self) -> set[str]:
        cached = self.__dict__.get("_cache")
        if cached is None:
            cached = set(self.ignored)
            self.__dict__["_cache"] = cached
        return cached


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def capture(found: Walk, entries: list[tuple[str, str]], ignored: list[str]) -> WorktreeExtras:
    """Record modes and empty folders of the walked work tree; `entries` are the recorded tree's (mode,
    path) pairs, `ignored` the paths ignored at record time."""
    umask = current_umask()
    modes = {}
    for mode, rel in entries:
        st_mode = found.files.get(rel)
        if st_mode is not None and stat.S_ISREG(st_mode) and stat.S_IMODE(st_mode) != default_perm(mode, umask):
            modes[rel] = stat.S_IMODE(st_mode)
    return WorktreeExtras(umask=umask, modes=modes, empty_dirs=empty_dirs(found), ignored=ignored,
                          git_dirs=list(found.git_dirs))


def tree_files(top: Path, env: Mapping[str, str], tree: str) -> list[tuple[str, str]]:
    """(mode, path) of every entry of `tree`."""
    raw = git(top, "ls-tree", "-r", "-z", "--full-tree", tree, env=env).stdout
    entries = []
    for item in raw.split(b"\0"):
        if item:
            meta, path = item.split(b"\t", 1)
            entries.append((meta[:6].decode(), os.fsdecode(path)))
    return entries


def default_perm(git_mode: str, umask: int) -> int:
    return (0o777 if git_mode == "100755" else 0o666) & ~umask


def empty_dirs(found: Walk) -> list[str]:
    """Walked folders holding no file at any depth, each ending with '/'."""
    held = found.holding()
    return sorted(f"{rel}/" for rel in found.dirs if rel not in held)


def ignored_paths(root: Path, env: Mapping[str, str]) -> list[str]:
    """The untracked paths git ignores in the work tree at `root` (a wholly ignored folder ends with '/')."""
    raw = git(root, "ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory", env=env, check=False).stdout
    return [os.fsdecode(p) for p in raw.split(b"\0") if p]


def apply(top: Path, env: Mapping[str, str], tree: str, extras: WorktreeExtras, found: Walk) -> None:
    """After the files are back: exact permission bits, the empty folders, no empty folder the run made."""
    prefix = str(top).rstrip("/") + "/"
    for mode, rel in tree_files(top, env, tree):
        path = prefix + rel
        try:
            st = os.lstat(path)
        except OSError:
            continue
        wanted = extras.modes.get(rel, default_perm(mode, extras.umask))
        if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != wanted:
            os.chmod(path, wanted)
    recorded = set(extras.empty_dirs)
    for rel in sorted(set(empty_dirs(found)) - recorded, key=len, reverse=True):
        if not extras.was_ignored(rel):
            try:
                (top / rel).rmdir()
            except OSError:
                pass  # not empty after all (a deeper folder is recorded): leave it
    for rel in extras.empty_dirs:
        (top / rel).mkdir(parents=True, exist_ok=True)


def user_excludes(top: Path) -> bytes:
    """The user's global ignore file (core.excludesFile, else git's default place), for leaf's own calls,
    which read no global config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(["git", "config", "--no-includes", "--path", "--get", "core.excludesFile"], cwd=top,
                          env=env, capture_output=True, timeout=30, check=False)
    configured = proc.stdout.decode(errors="surrogateescape").strip()
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    path = Path(configured).expanduser() if configured else Path(xdg) / "git" / "ignore"
    try:
        return path.read_bytes() + b"\n" if path.is_file() else b""
    except OSError:
        return b""


def append_ignored(excludes: Path, extras: WorktreeExtras) -> None:
    """Add every path ignored at record time to `excludes`, as an exact, anchored pattern."""
    with excludes.open("ab") as fh:
        for rel in extras.ignored:
            fh.write(os.fsencode(_exact_pattern(rel)) + b"\n")


def _exact_pattern(rel: str) -> str:
    body = re.sub(r"([\\*?\[])", r"\\\1", rel)
    if body.endswith(" "):
        body = body[:-1] + "\\ "
    return "/" + body


def save(extras: WorktreeExtras, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / _FILE).write_text(extras.model_dump_json())


def load(folder: Path | None) -> WorktreeExtras:
    path = folder / _FILE if folder is not None else None
    if path is None or not path.is_file():
        return WorktreeExtras()
    return WorktreeExtras.model_validate_json(path.read_text())
