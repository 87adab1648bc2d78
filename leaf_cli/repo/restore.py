"""Put a recorded state back exactly: `.git` itself if it is gone, objects, config and hooks, refs, HEAD,
files (bytes, modes, empty folders), the index. What the run did not create is never deleted: a path that
was ignored when the run started stays, whatever the agent did to `.gitignore`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from leaf_cli.repo import gitmeta, worktree
from leaf_cli.repo.checkpoint import RepoPaths, RepoState, current_tree, locate, tree_env
from leaf_cli.repo.git import GitError, git
from leaf_cli.repo.store import copy_objects

_GITLINK = "160000"


def restore(top: Path, store: Path, state: RepoState, keep_refs: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """Make the work tree at `top` and its repository exactly `state` again, then check that it is.

    Returns the refs that did not exist at record time and were deleted, as (name, object) pairs, so the
    caller can tell the user how to get them back. Refs named in `keep_refs` are left alone.
    """
    meta = Path(state.meta_dir) if state.meta_dir else None
    paths = locate(top)
    rebuilt = paths is None
    if paths is None:
        paths = _rebuild_git_dir(top, state, meta)
    copy_objects(store / "objects", paths.objects)  # the recorded trees and everything refs point at
    dropped = _restore_refs(top, state, keep_refs)
    if meta is not None:  # after the refs: updating refs/stash would append to the stash's reflog
        gitmeta.restore(paths, meta / "git", rebuild=rebuilt)
    extras = worktree.load(meta)
    _restore_files(top, store, state, extras)
    _restore_index(top, store, paths, meta)
    now = current_tree(top, store, state)
    if now != state.worktree_tree:
        raise GitError(f"restore incomplete: working tree is {now}, expected {state.worktree_tree}")
    return dropped


def _rebuild_git_dir(top: Path, state: RepoState, meta: Path | None) -> RepoPaths:
    """The agent removed or broke `.git`: set the broken one aside (never delete it) and make a new one."""
    dot_git = top / ".git"
    if dot_git.exists() or dot_git.is_symlink():
        dot_git.rename(top / f".git.leaf-broken-{int(time.time())}")
    git(top, "init", "-q", f"--object-format={state.object_format}")
    paths = locate(top)
    if paths is None:
        raise GitError(f"could not rebuild the git repository at {top}")
    if meta is not None:  # HEAD, config and packed-refs first: the refs are restored through them
        gitmeta.restore(paths, meta / "git", rebuild=True)
    return locate(top) or paths


def _restore_refs(top: Path, state: RepoState, keep_refs: tuple[str, ...]) -> list[tuple[str, str]]:
    """Every recorded ref back to its object, refs created since deleted (but `keep_refs`), then HEAD."""
    extra = [(name, sha) for name, sha in _refs(top).items() if name not in state.refs and name not in keep_refs]
    lines = "".join(f"update {name} {sha}\n" for name, sha in state.refs.items())
    lines += "".join(f"delete {name}\n" for name, _sha in extra)
    if lines:
        git(top, "update-ref", "--no-deref", "--stdin", input=lines.encode())
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


def _restore_files(top: Path, store: Path, state: RepoState, extras: worktree.WorktreeExtras) -> None:
    """Delete what the run added, then write back every path whose content, mode or type differs."""
    now = current_tree(top, store, state)
    env = {"GIT_DIR": str(store)}
    raw = git(top, "diff-tree", "-r", "-z", "--no-renames", state.worktree_tree, now, env=env).stdout
    fields = raw.split(b"\0")
    to_delete: list[str] = []
    to_write: list[str] = []
    for header, path_bytes in zip(fields[0::2], fields[1::2]):
        old_mode, new_mode, _old, _new, _status = header.decode().lstrip(":").split(" ")
        path = os.fsdecode(path_bytes)
        if new_mode not in ("000000", _GITLINK) and not (old_mode == "000000" and extras.was_ignored(path)):
            to_delete.append(path)
        if old_mode not in ("000000", _GITLINK):
            to_write.append(path)
    for path in to_delete:
        _remove(top, path, extras)
    with tempfile.TemporaryDirectory(prefix="leaf-index-") as tmp:
        scratch_env = tree_env(store, top, Path(tmp) / "index")
        git(top, "read-tree", state.worktree_tree, env=scratch_env)
        if to_write:
            git(top, "checkout-index", "-f", "-z", "--stdin", env=scratch_env,
                input=b"\0".join(os.fsencode(p) for p in to_write))
        worktree.apply(top, scratch_env, state.worktree_tree, extras)


def _remove(top: Path, rel: str, extras: worktree.WorktreeExtras) -> None:
    """Remove one file the recorded state did not have, and the folders it leaves empty (unless recorded)."""
    target = top / rel
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    parent = target.parent
    keep = set(extras.empty_dirs)
    while parent != top and parent.is_dir() and not any(parent.iterdir()):
        if os.path.relpath(parent, top).replace(os.sep, "/") + "/" in keep:
            break
        parent.rmdir()
        parent = parent.parent


def _restore_index(top: Path, store: Path, paths: RepoPaths, meta: Path | None) -> None:
    saved = meta / "index" if meta else None
    if saved is not None and saved.is_file():
        shutil.copyfile(saved, paths.index)
        # The files were just rewritten, so the stat data is stale; refresh it (content is untouched). The
        # store as git dir: the repository's fsmonitor and filters must not run here either.
        git(top, "update-index", "-q", "--refresh", env=tree_env(store, top, paths.index), check=False)
    elif paths.index.exists():
        paths.index.unlink()
