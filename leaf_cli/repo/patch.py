"""The run's patch between two recorded trees, in memory that does not grow with file size.

`git diff --binary` loads both sides of every changed blob whole (a sparse 1 GB file cost 80 s and a
gigabyte of RAM). So the changed paths are listed first from the trees alone (diff-tree, cat-file sizes),
and a file over PATCH_FILE_LIMIT, or a special file (a FIFO: git cannot hold one), is left out of the
patch: the diff is taken against a copy of the new tree that holds the old entry there. Each one left out
is named in a `# leaf:` line above the patch, which the review shows and `git apply` skips; undo restores
them all the same, from the full trees.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from leaf_cli.repo.git import git
from leaf_cli.repo.snapshot import GITLINK, marker_kinds, tree_env
from leaf_cli.repo.walk import Walk

PATCH_FILE_LIMIT = 8 << 20
"""Bytes: a changed file larger than this (either side) is named, not shown, in the patch."""
_NONE = "000000"


@dataclass
class Patch:
    text: str
    stat: str
    left_out: list[str] = field(default_factory=list)
    """One line per path left out, saying why."""


def changed_paths(top: Path, store: Path, old: str, new: str) -> list[tuple[str, str, str, str, str]]:
    """(old mode, new mode, old id, new id, path) of every path that differs; no blob is read."""
    raw = git(top, "diff-tree", "-r", "-z", "--no-renames", old, new, env={"GIT_DIR": str(store)}).stdout
    fields = raw.split(b"\0")
    found = []
    for header, path in zip(fields[0::2], fields[1::2]):
        old_mode, new_mode, old_id, new_id, _status = header.decode().lstrip(":").split(" ")
        found.append((old_mode, new_mode, old_id, new_id, os.fsdecode(path)))
    return found


def make_patch(top: Path, store: Path, old: str, new: str, *, object_format: str = "sha1",
               found: Walk | None = None, recorded_repos: frozenset[str] = frozenset(),
               limit: int = PATCH_FILE_LIMIT, more_notes: tuple[str, ...] = ()) -> Patch:
    """The binary-safe patch and `--stat` from `old` to `new`, large and special files named, not shown."""
    changes = changed_paths(top, store, old, new)
    sizes = _sizes(top, store, [c[i] for c in changes for i in (2, 3) if c[i - 2] not in (_NONE, GITLINK)])
    kinds = marker_kinds(object_format)
    left_out: dict[str, str] = {}
    for old_mode, new_mode, old_id, new_id, path in changes:
        if GITLINK in (old_mode, new_mode):
            was, now = kinds.get(old_id) if old_mode == GITLINK else None, kinds.get(new_id) if new_mode == GITLINK else None
            left_out[path] = f"{path}: {'a ' + now if now else 'no longer a ' + str(was)} (git cannot hold it)"
        else:
            big = max(sizes.get(old_id, 0), sizes.get(new_id, 0))
            if big > limit:
                left_out[path] = f"{path}: {_human(big)}, over the {_human(limit)} patch limit"
    shown = _without(top, store, new, changes, set(left_out)) if left_out else new
    env = {"GIT_DIR": str(store)}
    args = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames"]
    text = git(top, *args, "--binary", "--full-index", old, shown, env=env).stdout.decode(errors="replace")
    stat = git(top, *args, "--stat=100", old, shown, env=env).stdout.decode(errors="replace")
    notes = list(left_out.values())
    if found is not None:
        notes += [f"{rel}/: a git dir (a moved .git?); undo moves it aside" for rel in found.git_dirs]
        notes += [f"{rel}/.git: a repository the run made; undo moves its .git aside" for rel in found.repos
                  if rel not in recorded_repos]
    notes += more_notes
    header = "".join(f"# leaf: not in this patch (undo still restores it): {n}\n" for n in notes)
    return Patch(text=header + text, stat=stat, left_out=notes)


def _sizes(top: Path, store: Path, ids: list[str]) -> dict[str, int]:
    if not ids:
        return {}
    wanted = "".join(f"{i}\n" for i in dict.fromkeys(ids)).encode()
    proc = git(top, "cat-file", "--batch-check=%(objectname) %(objectsize)", env={"GIT_DIR": str(store)},
               input=wanted, check=False)
    sizes = {}
    for line in proc.stdout.decode().splitlines():
        name, _, size = line.partition(" ")
        if size.isdigit():
            sizes[name] = int(size)
    return sizes


def _without(top: Path, store: Path, new: str, changes: list[tuple[str, str, str, str, str]], paths: set[str]) -> str:
    """`new` with the old entry (or none) at each of `paths`."""
    info = "".join(f"{old_mode} {old_id}\t{path}\0" if old_mode != _NONE else f"0 {old_id}\t{path}\0"
                   for old_mode, _new_mode, old_id, _new_id, path in changes if path in paths)
    with tempfile.TemporaryDirectory(prefix="leaf-patch-") as tmp:
        env = tree_env(store, top, Path(tmp) / "index")
        git(top, "read-tree", new, env=env)
        git(top, "update-index", "-z", "--index-info", env=env, input=os.fsencode(info))
        return git(top, "write-tree", env=env).stdout.decode().strip()


def _human(size: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return str(size)
