"""A walked work tree as one git tree in the store: exact bytes of every file and link, FIFOs and other
special files as markers, nested repositories' files included (their `.git` never).

The store's own index for the work tree is git's stat cache: it keeps the stat data of the last snapshot,
so `update-index` hashes only files that changed since. Paths are handed to git one by one (-z, stdin),
so no ignore rule, `.gitignore` of `*` or nested `git init` hides anything from it. A special file is
stored as a gitlink whose id names its kind (MARKERS): no real file is ever a gitlink here (nested
repositories are walked as folders), so a marker cannot be confused with content.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.repo.git import git
from leaf_cli.repo.store import clear_stale_lock, stat_cache
from leaf_cli.repo.walk import Walk

GITLINK = "160000"
_BIG_FILE = "16m"  # files over this are hashed by streaming (git's bulk check-in), never read whole


class RecordError(LeafError):
    """The repository holds something a checkpoint cannot record, so the run must not start."""


def marker(kind: str, object_format: str = "sha1") -> str:
    """The id a special file of `kind` ("fifo", "socket", ...) has in a snapshot tree."""
    digest = hashlib.sha256 if object_format == "sha256" else hashlib.sha1
    return digest(f"leaf special file: {kind}".encode()).hexdigest()


def marker_kinds(object_format: str = "sha1") -> dict[str, str]:
    return {marker(k, object_format): k for k in ("fifo", "socket", "character device", "block device",
                                                   "special file")}


def tree_env(store: Path, top: Path, index: Path, excludes: Path | None = None) -> dict[str, str]:
    """Git env for content calls: the store is the git dir (its config, its raw attributes, its objects).

    `excludes` is the run's ignore file (the user's global excludes and the paths ignored at its start).
    No alternates into the repository on purpose: git skips writing an object it can already see, and then
    a tree would exist only in the repository, where the agent can prune it.
    """
    config = [("core.bigFileThreshold", _BIG_FILE), ("core.protectNTFS", "false"), ("core.protectHFS", "false")]
    if excludes is not None:
        config.append(("core.excludesFile", str(excludes)))
    env = {"GIT_DIR": str(store), "GIT_WORK_TREE": str(top), "GIT_INDEX_FILE": str(index),
           "GIT_CONFIG_COUNT": str(len(config))}
    for n, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"] = key, value
    return env


def snapshot(top: Path, store: Path, found: Walk, *, object_format: str = "sha1", strict: bool = False) -> str:
    """The walked work tree `found` as a tree in `store`. `strict` (the checkpoint) refuses a file it
    cannot read; otherwise such a file is left out (undo then writes the recorded one back)."""
    index = stat_cache(store, top)
    clear_stale_lock(index)
    env = tree_env(store, top, index)
    files = list(found.files)
    unreadable = [rel for rel, mode in found.files.items() if not _readable(top, rel, mode)]
    if unreadable and strict:
        raise RecordError(f"leaf cannot record this work tree, so the run does not start: {unreadable[0]} "
                          "is not readable (fix its permissions or move it)")
    files = [rel for rel in files if rel not in set(unreadable)]
    cached = _index_paths(top, env)
    gone = cached - set(files)
    if gone:
        _update(top, env, ["--force-remove"], sorted(gone))
    if files:
        _update(top, env, ["--add", "--remove", "--replace"], files)
    if found.specials:
        info = "".join(f"{GITLINK} {marker(kind, object_format)}\t{rel}\0" for rel, kind in found.specials.items())
        git(top, "update-index", "-z", "--index-info", env=env, input=os.fsencode(info))
    proc = git(top, "write-tree", env=env, check=False)
    tree = proc.stdout.decode().strip()
    if proc.returncode != 0 or not tree:
        raise RecordError(f"leaf could not write the work tree as a git tree: "
                          f"{proc.stderr.decode(errors='replace').strip()[-300:]}")
    return tree


def _readable(top: Path, rel: str, mode: int) -> bool:
    return stat.S_ISLNK(mode) or os.access(os.path.join(top, rel), os.R_OK)


def _index_paths(top: Path, env: dict[str, str]) -> set[str]:
    proc = git(top, "ls-files", "-z", "--full-name", env=env, check=False)
    if proc.returncode != 0:  # a damaged cache (a git killed mid-write): start a new one, it only costs hashing
        Path(env["GIT_INDEX_FILE"]).unlink(missing_ok=True)
        return set()
    return {os.fsdecode(p) for p in proc.stdout.split(b"\0") if p}


def _update(top: Path, env: dict[str, str], flags: list[str], paths: list[str]) -> None:
    git(top, "update-index", "-z", *flags, "--stdin", env=env, input=b"\0".join(os.fsencode(p) for p in paths))
