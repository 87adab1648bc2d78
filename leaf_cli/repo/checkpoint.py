"""Record a repository's complete state before a run, in the store the agent cannot reach.

What is recorded: HEAD and its branch, every ref, the raw index file (stat data, intent-to-add and all),
the index as a tree, and the working tree as a tree (tracked files plus untracked, not ignored files, with
their modes), plus the few metadata files needed to rebuild `.git` if the agent deletes it. Trees are
written with git plumbing through a scratch index and `GIT_OBJECT_DIRECTORY` pointing into the store.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from leaf_cli.repo.git import GitError, git, out
from leaf_cli.repo.store import ensure_store, link_objects

# Small files under the git dir that `leaf undo` puts back when `.git` is gone (paths relative to it).
META_FILES = ("HEAD", "config", "packed-refs", "logs/refs/stash", "info/exclude", "shallow", "description")


class RepoState(BaseModel):
    """One recorded state. Trees and commits live in the store; `meta_dir` holds the raw index and meta files."""

    head: str | None = Field(None, description="HEAD's commit; None on an unborn branch.")
    branch: str | None = Field(None, description="The ref HEAD points at (refs/heads/x); None when detached.")
    refs: dict[str, str] = Field(default_factory=dict, description="Every ref and its object at record time.")
    index_tree: str | None = Field(None, description="The index as a tree; None while it has conflicts.")
    worktree_tree: str = Field(description="Tracked and untracked (not ignored) files as a tree.")
    object_format: str = "sha1"
    meta_dir: str | None = Field(None, description="Saved raw index and .git metadata files.")


@dataclass(frozen=True)
class RepoPaths:
    """Where a work tree keeps its git data (linked worktrees split it into git_dir and common_dir)."""

    top: Path
    git_dir: Path
    common_dir: Path
    objects: Path
    index: Path


def locate(top: Path) -> RepoPaths | None:
    """The git paths of the work tree at `top`, or None when its repository is gone or broken."""
    proc = git(top, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir",
               "--git-path", "objects", "--git-path", "index", check=False)
    lines = proc.stdout.decode(errors="surrogateescape").splitlines()
    if proc.returncode != 0 or len(lines) != 5 or Path(lines[0]).resolve() != top.resolve():
        return None
    return RepoPaths(top, *(Path(line) for line in lines[1:]))


def object_format(top: Path) -> str:
    return out(top, "rev-parse", "--show-object-format", check=False) or "sha1"


def record(top: Path, store: Path, meta_dir: Path) -> RepoState:
    """Record the complete state of the work tree at `top` into `store` (objects) and `meta_dir` (files)."""
    paths = locate(top)
    if paths is None:
        raise GitError(f"{top} has no usable git repository to record")
    fmt = object_format(top)
    objects = ensure_store(store, fmt)
    link_objects(paths.objects, objects)
    meta_dir.mkdir(parents=True, exist_ok=True)
    _save_meta(paths, meta_dir)
    head = out(top, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False) or None
    branch = out(top, "symbolic-ref", "-q", "HEAD", check=False) or None
    refs = _refs(top)
    with tempfile.TemporaryDirectory(prefix="leaf-index-") as tmp:
        scratch = Path(tmp) / "index"
        if (meta_dir / "index").is_file():
            shutil.copy2(meta_dir / "index", scratch)  # copy2 keeps the mtime, so git's racy-clean rules still hold
        env = tree_env(paths.git_dir, top, objects, scratch)
        index_tree = _write_tree(top, env)
        worktree_tree = add_all_and_write_tree(top, env)
    return RepoState(head=head, branch=branch, refs=refs, index_tree=index_tree, worktree_tree=worktree_tree,
                     object_format=fmt, meta_dir=str(meta_dir))


def current_tree(top: Path, store: Path, fallback_tree: str) -> str:
    """The working tree as it is now, as a tree in the store; works even after the agent removed `.git`.

    The live index serves as the stat cache (unchanged files are not hashed again). Without a repository
    the store itself is the git dir and `fallback_tree` seeds the scratch index.
    """
    paths = locate(top)
    objects = store / "objects"
    if paths is not None:
        link_objects(paths.objects, objects)  # the agent's own objects too, so every tree we write is whole here
    with tempfile.TemporaryDirectory(prefix="leaf-index-") as tmp:
        scratch = Path(tmp) / "index"
        if paths is not None and paths.index.is_file():
            shutil.copy2(paths.index, scratch)
        env = tree_env(paths.git_dir if paths else store, top, objects, scratch)
        if paths is None or not scratch.is_file():
            git(top, "read-tree", fallback_tree, env=env)
        return add_all_and_write_tree(top, env)


def tree_env(git_dir: Path, top: Path, objects: Path, index: Path) -> dict[str, str]:
    """Point git at a scratch index and an object folder (the store's, which holds every repository object).

    No alternates on purpose: git skips writing an object it can already see, and then a tree would exist
    only in the repository, where the agent can prune it.
    """
    return {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(top), "GIT_INDEX_FILE": str(index),
            "GIT_OBJECT_DIRECTORY": str(objects)}


def add_all_and_write_tree(top: Path, env: dict[str, str]) -> str:
    """Stage every change (new, modified, deleted, mode) into the scratch index and write it as a tree."""
    git(top, "add", "-A", "--ignore-errors", "--", ":/", env=env, check=False)
    tree = _write_tree(top, env)
    if tree is None:
        raise GitError("could not write the working tree as a git tree")
    return tree


def diff(top: Path, store: Path, old_tree: str, new_tree: str, *, stat: bool = False) -> str:
    """`git diff` between two recorded trees (binary-safe patch, or `--stat` with `stat=True`)."""
    env = {"GIT_DIR": str(store), "GIT_OBJECT_DIRECTORY": str(store / "objects")}
    args = ["diff", "--no-color", "--no-ext-diff", "--no-renames"]
    args += ["--stat=100"] if stat else ["--binary", "--full-index"]
    return git(top, *args, old_tree, new_tree, env=env).stdout.decode(errors="replace")


def _write_tree(top: Path, env: dict[str, str]) -> str | None:
    proc = git(top, "write-tree", env=env, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def _refs(top: Path) -> dict[str, str]:
    listing = out(top, "for-each-ref", "--format=%(objectname) %(refname)", check=False)
    return {name: sha for sha, name in (line.split(" ", 1) for line in listing.splitlines() if " " in line)}


def _save_meta(paths: RepoPaths, meta_dir: Path) -> None:
    if paths.index.is_file():
        shutil.copy2(paths.index, meta_dir / "index")
    for name in META_FILES:
        src = (paths.git_dir if name == "HEAD" else paths.common_dir) / name
        if src.is_file():
            (meta_dir / "git" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, meta_dir / "git" / name)
