"""Record a repository's complete state before a run, in the store the agent cannot reach.

What is recorded: HEAD and its branch, every ref, the raw index file (stat data, intent-to-add and all),
the index as a tree, the working tree as a tree of exact bytes (tracked files plus untracked, not ignored
files, with their modes), the git dir's config, hooks, `info/` and operation state (gitmeta), and what a
tree cannot hold: permission bits, empty folders, ignored paths (worktree). Trees are written with git
plumbing whose git dir is the store itself (tree_env), so the repository's config and attributes play no
part: no filter, fsmonitor or hook of the agent's runs, and CRLF bytes stay CRLF.

What cannot be recorded makes `record` refuse with one line (RecordError): a nested repository or
submodule (its own history is not in this one), an unreadable file.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from leaf_cli.errors import LeafError
from leaf_cli.repo import gitmeta, worktree
from leaf_cli.repo.git import GitError, git, out
from leaf_cli.repo.store import copy_objects, ensure_store, stat_cache

_GITLINK = "160000"
EXCLUDES = "excludes"
_COPY_TRIES = 3


class RecordError(LeafError):
    """The repository holds something a checkpoint cannot record, so the run must not start."""


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
    ensure_store(store, fmt)
    _copy_excludes(paths, store)
    meta_dir.mkdir(parents=True, exist_ok=True)
    head = out(top, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False) or None
    branch = out(top, "symbolic-ref", "-q", "HEAD", check=False) or None
    refs = _refs(top)
    if paths.index.is_file():
        shutil.copy2(paths.index, meta_dir / "index")
    gitmeta.save(paths, meta_dir / "git")
    index_tree = _copy_until_whole(paths, store, refs, meta_dir / "index")
    excludes = meta_dir / EXCLUDES
    excludes.write_bytes(worktree.user_excludes(top))
    base = index_tree or (f"{head}^{{tree}}" if head else None)
    worktree_tree = snapshot(top, store, base, excludes, strict=True)
    env = tree_env(store, top, stat_cache(store, top))
    entries = worktree.tree_files(top, env, worktree_tree)
    _refuse_gitlinks(entries)
    extras = worktree.capture(top, env, entries)
    worktree.save(extras, meta_dir)
    worktree.append_ignored(excludes, extras)  # later snapshots of this run leave them out: not the run's files
    return RepoState(head=head, branch=branch, refs=refs, index_tree=index_tree, worktree_tree=worktree_tree,
                     object_format=fmt, meta_dir=str(meta_dir))


def current_tree(top: Path, store: Path, state: RepoState) -> str:
    """The working tree as it is now, as a tree in the store; works even after the agent removed `.git`.

    Paths ignored when `state` was recorded stay out (they are the user's, whatever `.gitignore` says now).
    """
    excludes = Path(state.meta_dir) / EXCLUDES if state.meta_dir else None
    return snapshot(top, store, state.worktree_tree, excludes if excludes and excludes.is_file() else None)


def snapshot(top: Path, store: Path, base: str | None, excludes: Path | None, *, strict: bool = False) -> str:
    """Every file of the work tree as a tree: `base`'s paths plus untracked, not ignored ones, as they are now.

    The store's own index for this work tree is git's stat cache: `read-tree -m` takes `base`'s paths
    and keeps the cached stat data of entries whose content matches, so unchanged files are not hashed
    again. `strict` (the checkpoint) refuses when a file cannot be read instead of leaving it out.
    """
    env = tree_env(store, top, stat_cache(store, top), excludes)
    if base is not None:
        git(top, "read-tree", "-m", "-i", base, env=env)
    else:
        git(top, "read-tree", "--empty", env=env)
    proc = git(top, "add", "-A", *([] if strict else ["--ignore-errors"]), "--", ":/", env=env, check=False)
    if strict and proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        raise RecordError(f"leaf cannot record this work tree, so the run does not start: "
                          f"{detail[-1] if detail else 'git add failed'}")
    tree = _write_tree(top, env)
    if tree is None:
        raise GitError("could not write the working tree as a git tree")
    return tree


def tree_env(store: Path, top: Path, index: Path, excludes: Path | None = None) -> dict[str, str]:
    """Git env for content calls: the store is the git dir (its config, its raw attributes, its objects).

    `excludes` is the run's ignore file (the user's global excludes and the paths ignored at its start).
    No alternates into the repository on purpose: git skips writing an object it can already see, and then
    a tree would exist only in the repository, where the agent can prune it.
    """
    env = {"GIT_DIR": str(store), "GIT_WORK_TREE": str(top), "GIT_INDEX_FILE": str(index)}
    if excludes is not None:
        env.update({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.excludesFile",
                    "GIT_CONFIG_VALUE_0": str(excludes)})
    return env


def diff(top: Path, store: Path, old_tree: str, new_tree: str, *, stat: bool = False) -> str:
    """`git diff` between two recorded trees (binary-safe patch, or `--stat` with `stat=True`)."""
    env = {"GIT_DIR": str(store)}
    args = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames"]
    args += ["--stat=100"] if stat else ["--binary", "--full-index"]
    return git(top, *args, old_tree, new_tree, env=env).stdout.decode(errors="replace")


def _copy_excludes(paths: RepoPaths, store: Path) -> None:
    """The repository's `info/exclude` as the store's, so leaf's snapshots ignore what the user's git ignores."""
    src = paths.common_dir / "info" / "exclude"
    data = src.read_bytes() if src.is_file() else b""
    (store / "info").mkdir(exist_ok=True)
    (store / "info" / "exclude").write_bytes(data)


def _copy_until_whole(paths: RepoPaths, store: Path, refs: dict[str, str], index: Path) -> str | None:
    """Copy the repository's objects into the store until every ref and index entry is there; return the
    index as a tree (None when it has conflicts or there is no index).

    A `git gc` running meanwhile can pack loose objects and delete them between our listing and our copy;
    the next round finds them in the new pack.
    """
    wanted = "".join(f"{sha}\n" for sha in set(refs.values())).encode()
    for _ in range(_COPY_TRIES):
        copy_objects(paths.objects, store / "objects")
        missing = b"missing" in git(paths.top, "cat-file", "--batch-check", env={"GIT_DIR": str(store)},
                                    input=wanted).stdout
        if missing:
            continue
        tree = _index_tree(paths.top, store, index)
        if tree is not None or not index.is_file() or _index_has_conflicts(paths.top, store, index):
            return tree
    raise RecordError("leaf could not copy the repository's objects (is a `git gc` running?); try again")


def _index_tree(top: Path, store: Path, index: Path) -> str | None:
    if not index.is_file():
        return None
    with tempfile.TemporaryDirectory(prefix="leaf-index-") as tmp:
        scratch = Path(tmp) / "index"
        shutil.copy2(index, scratch)
        return _write_tree(top, tree_env(store, top, scratch))


def _index_has_conflicts(top: Path, store: Path, index: Path) -> bool:
    proc = git(top, "ls-files", "-u", env=tree_env(store, top, index), check=False)
    return proc.returncode == 0 and bool(proc.stdout.strip())


def _refuse_gitlinks(entries: list[tuple[str, str]]) -> None:
    nested = [rel for mode, rel in entries if mode == _GITLINK]
    if nested:
        raise RecordError(f"{nested[0]} is a nested git repository or submodule, whose files leaf cannot "
                          "checkpoint; run leaf inside it, or commit or move it first")


def _write_tree(top: Path, env: dict[str, str]) -> str | None:
    proc = git(top, "write-tree", env=env, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def _refs(top: Path) -> dict[str, str]:
    listing = out(top, "for-each-ref", "--format=%(objectname) %(refname)", check=False)
    return {name: sha for sha, name in (line.split(" ", 1) for line in listing.splitlines() if " " in line)}
