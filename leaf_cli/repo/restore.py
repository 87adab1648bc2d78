"""Put a recorded state back exactly: `.git` itself if it is gone, objects, refs, HEAD, files, the index."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from leaf_cli.repo.checkpoint import META_FILES, RepoPaths, RepoState, current_tree, locate, tree_env
from leaf_cli.repo.git import GitError, git
from leaf_cli.repo.store import link_objects

_GITLINK = "160000"


def restore(top: Path, store: Path, state: RepoState) -> list[tuple[str, str]]:
    """Make the work tree at `top` and its repository exactly `state` again, then check that it is.

    Returns the refs that did not exist at record time and were deleted, as (name, object) pairs, so the
    caller can tell the user how to get them back.
    """
    meta = Path(state.meta_dir) if state.meta_dir else None
    paths = locate(top) or _rebuild_git_dir(top, state, meta)
    link_objects(store / "objects", paths.objects)  # the recorded trees and everything refs point at
    dropped = _restore_refs(top, paths, state, meta)
    _restore_files(top, store, paths, state)
    _restore_index(top, paths, meta)
    now = current_tree(top, store, state.worktree_tree)
    if now != state.worktree_tree:
        raise GitError(f"restore incomplete: working tree is {now}, expected {state.worktree_tree}")
    return dropped


def _rebuild_git_dir(top: Path, state: RepoState, meta: Path | None) -> RepoPaths:
    """The agent removed or broke `.git`: set the broken one aside (never delete it) and make a new one."""
    dot_git = top / ".git"
    if dot_git.exists() or dot_git.is_symlink():
        dot_git.rename(top / f".git.leaf-broken-{int(time.time())}")
    git(top, "init", "-q", f"--object-format={state.object_format}")
    if meta is not None:
        for name in META_FILES:
            src = meta / "git" / name
            if src.is_file():
                (dot_git / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dot_git / name)
    paths = locate(top)
    if paths is None:
        raise GitError(f"could not rebuild the git repository at {top}")
    return paths


def _restore_refs(top: Path, paths: RepoPaths, state: RepoState, meta: Path | None) -> list[tuple[str, str]]:
    """Every recorded ref back to its object, refs created since deleted, then HEAD."""
    extra = [(name, sha) for name, sha in _refs(top).items() if name not in state.refs]
    lines = "".join(f"update {name} {sha}\n" for name, sha in state.refs.items())
    lines += "".join(f"delete {name}\n" for name, _sha in extra)
    if lines:
        git(top, "update-ref", "--no-deref", "--stdin", input=lines.encode())
    stash_log = meta / "git" / "logs/refs/stash" if meta else None
    if stash_log is not None and stash_log.is_file():
        # The stash list is refs/stash's reflog; `git stash clear` deletes it along with the ref.
        target = paths.common_dir / "logs/refs/stash"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(stash_log, target)
    if state.branch is not None:
        git(top, "symbolic-ref", "HEAD", state.branch)
        if state.head is None and state.branch not in state.refs:
            git(top, "update-ref", "-d", state.branch, check=False)  # unborn again: drop the agent's commits
    elif state.head is not None:
        git(top, "update-ref", "--no-deref", "HEAD", state.head)
    return extra


def _refs(top: Path) -> dict[str, str]:
    listing = git(top, "for-each-ref", "--format=%(objectname) %(refname)", check=False).stdout.decode()
    return {name: sha for sha, name in (line.split(" ", 1) for line in listing.splitlines() if " " in line)}


def _restore_files(top: Path, store: Path, paths: RepoPaths, state: RepoState) -> None:
    """Delete what the recorded tree lacks, then write back every path whose content, mode or type differs."""
    now = current_tree(top, store, state.worktree_tree)
    raw = git(top, "diff-tree", "-r", "-z", "--no-renames", state.worktree_tree, now,
              env={"GIT_DIR": str(store)}).stdout  # both trees live in the store
    fields = raw.split(b"\0")
    to_delete: list[str] = []
    to_write: list[str] = []
    for header, path_bytes in zip(fields[0::2], fields[1::2]):
        old_mode, new_mode, _old, _new, status = header.decode().lstrip(":").split(" ")
        path = os.fsdecode(path_bytes)
        if new_mode != "000000" and new_mode != _GITLINK:
            to_delete.append(path)
        if old_mode != "000000" and old_mode != _GITLINK:
            to_write.append(path)
    for path in to_delete:
        _remove(top, path)
    if to_write:
        with tempfile.TemporaryDirectory(prefix="leaf-index-") as tmp:
            env = tree_env(paths.git_dir, top, paths.objects, Path(tmp) / "index")
            git(top, "read-tree", state.worktree_tree, env=env)
            git(top, "checkout-index", "-f", "-z", "--stdin", env=env, input=b"\0".join(os.fsencode(p) for p in to_write))


def _remove(top: Path, rel: str) -> None:
    """Remove one file the recorded state did not have, and the folders it leaves empty."""
    target = top / rel
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    parent = target.parent
    while parent != top and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


def _restore_index(top: Path, paths: RepoPaths, meta: Path | None) -> None:
    saved = meta / "index" if meta else None
    if saved is not None and saved.is_file():
        shutil.copyfile(saved, paths.index)
        # The files were just rewritten, so the stat data is stale; refresh it (content is untouched).
        git(top, "update-index", "-q", "--refresh", check=False)
    elif paths.index.exists():
        paths.index.unlink()
