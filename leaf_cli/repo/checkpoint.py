"""Record a repository's complete state before a run, in the store the agent cannot reach.

What is recorded: HEAD and its branch, every ref, the git dir itself as data (gitmeta: config, hooks,
refs, reflogs, the index, operation state; objects copied to the store), and the work tree as one tree of
exact bytes built by walking the file system (walk, snapshot): tracked and untracked files, links,
FIFOs and other special files as markers, nested repositories' and submodules' files, each nested git
dir recorded like the top's. Permission bits, empty folders and the paths ignored at the start are kept
beside it (worktree). Where each git dir and `.git` entry was is written down now, while it is the user's:
undo goes by that record, never by what the repository says later.

What cannot be recorded makes `record` refuse with one line (RecordError): an unreadable file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from leaf_cli.repo import gitmeta, ignored as ignored_names, worktree
from leaf_cli.repo.git import GitError, git, out
from leaf_cli.repo.snapshot import RecordError, snapshot, tree_env
from leaf_cli.repo.store import copy_objects, ensure_store
from leaf_cli.repo.walk import Walk, walk

__all__ = ["RecordError", "RepoState", "current_tree", "diff", "locate", "record", "tree_env"]
EXCLUDES = "excludes"
_COPY_TRIES = 3


class GitData(BaseModel):
    """One git dir saved as data (gitmeta), to be written back at the path it had."""

    path: str = Field(description="The git dir, absolute and resolved at record time.")
    folder: str = Field(description="Its saved copy.")
    anchor: str = Field(description="Path components below this one are checked (and repaired) on restore.")


class Pointer(BaseModel):
    """A `.git` entry of the work tree (the top's or a nested repository's) as it was."""

    rel: str
    kind: str = Field(description="dir, file (a `gitdir:` file) or symlink.")
    target: str | None = Field(None, description="A symlink's target.")
    data: str | None = Field(None, description="Saved bytes of a `gitdir:` file.")


class NestedRepo(BaseModel):
    root: str = Field(description="The repository's work tree, relative to the top.")
    git_dir: str
    store: str = Field(description="The store its objects were copied to.")


class RepoState(BaseModel):
    """One recorded state. Trees and commits live in the store; `meta_dir` holds the raw index and meta files."""

    head: str | None = Field(None, description="HEAD's commit; None on an unborn branch.")
    branch: str | None = Field(None, description="The ref HEAD points at (refs/heads/x); None when detached.")
    refs: dict[str, str] = Field(default_factory=dict, description="Every ref and its object at record time.")
    index_tree: str | None = Field(None, description="The index as a tree; None while it has conflicts.")
    worktree_tree: str = Field(description="Tracked and untracked (not ignored) files as a tree.")
    object_format: str = "sha1"
    meta_dir: str | None = Field(None, description="Saved raw index and .git metadata files.")
    top: str | None = Field(None, description="The work tree recorded (resolved).")
    git_dir: str | None = Field(None, description="The top's git dir, resolved at record time.")
    common_dir: str | None = None
    git_data: list[GitData] = Field(default_factory=list)
    stores: dict[str, str] = Field(default_factory=dict, description="Each objects folder and its store.")
    pointers: list[Pointer] = Field(default_factory=list)
    nested: list[NestedRepo] = Field(default_factory=list)


@dataclass(frozen=True)
class RepoPaths:
    """Where a work tree keeps its git data (linked worktrees split it into git_dir and common_dir)."""

    top: Path
    git_dir: Path
    common_dir: Path
    objects: Path
    index: Path


def locate(top: Path) -> RepoPaths | None:
    """The git paths of the work tree at `top`, or None when its repository is gone or broken.

    One rev-parse per path: a path may hold a newline, so lines of one output cannot be told apart.
    """
    found = []
    for args in (("--show-toplevel",), ("--git-dir",), ("--git-common-dir",), ("--git-path", "objects"),
                 ("--git-path", "index")):
        proc = git(top, "rev-parse", "--path-format=absolute", *args, check=False)
        if proc.returncode != 0 or not proc.stdout.endswith(b"\n"):
            return None
        found.append(Path(os.fsdecode(proc.stdout[:-1])))
    if found[0].resolve() != top.resolve():
        return None
    return RepoPaths(top, *found[1:])


def object_format(top: Path) -> str:
    return out(top, "rev-parse", "--show-object-format", check=False) or "sha1"


def record(top: Path, store: Path, meta_dir: Path) -> RepoState:
    """Record the complete state of the work tree at `top` into `store` (objects) and `meta_dir` (files)."""
    paths = locate(top)
    if paths is None:
        raise GitError(f"{top} has no usable git repository to record")
    fmt = object_format(top)
    ensure_store(store, fmt)
    _copy_excludes(paths.common_dir, store)
    meta_dir.mkdir(parents=True, exist_ok=True)
    head = out(top, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False) or None
    branch = out(top, "symbolic-ref", "-q", "HEAD", check=False) or None
    refs = _refs(top)
    git_data, stores = _save_git_dirs(top, store, meta_dir, [paths], fmt, [], {})  # first: a gc may run meanwhile
    index_tree = _copy_until_whole(paths, store, refs, paths.index)
    excludes = meta_dir / EXCLUDES
    excludes.write_bytes(worktree.user_excludes(top))
    ignore_env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.excludesFile", "GIT_CONFIG_VALUE_0": str(excludes)}
    ignored = worktree.ignored_paths(top, ignore_env)
    skip = set(ignored)
    pointers = [_pointer(top, ".git", meta_dir)]
    nested: list[tuple[str, RepoPaths]] = []

    def on_repo(rel: str) -> None:  # a nested repository or submodule: its own ignored paths, its git dir
        pointers.append(_pointer(top, f"{rel}/.git", meta_dir))
        inner = locate(top / rel)
        if inner is None:
            return  # a `.git` that names no usable repository: kept as it is, its folder walked as files
        found_ignored = [f"{rel}/{p}" for p in worktree.ignored_paths(top / rel, ignore_env)]
        ignored.extend(found_ignored)
        skip.update(found_ignored)
        nested.append((rel, inner))

    found = walk(str(top), lambda rel: rel in skip or rel + "/" in skip, on_repo=on_repo)
    ignored_names.record(top, ignored, meta_dir)  # names only: what the run makes in `build/` can go at undo
    git_data, stores = _save_git_dirs(top, store, meta_dir, [p for _rel, p in nested], fmt, git_data, stores)
    worktree_tree = snapshot(top, store, found, object_format=fmt, strict=True)
    env = tree_env(store, top, meta_dir / "unused-index")
    extras = worktree.capture(found, worktree.tree_files(top, env, worktree_tree), ignored)
    worktree.save(extras, meta_dir)
    worktree.append_ignored(excludes, extras)
    return RepoState(head=head, branch=branch, refs=refs, index_tree=index_tree, worktree_tree=worktree_tree,
                     object_format=fmt, meta_dir=str(meta_dir), top=str(top.resolve()),
                     git_dir=os.path.realpath(paths.git_dir), common_dir=os.path.realpath(paths.common_dir),
                     git_data=git_data, stores=stores, pointers=pointers,
                     nested=[NestedRepo(root=rel, git_dir=os.path.realpath(p.git_dir),
                                        store=stores.get(os.path.realpath(p.objects), str(store)))
                             for rel, p in nested])


def current_walk(top: Path, state: RepoState) -> Walk:
    """The work tree as it is now, walked with the paths ignored at record time left out."""
    extras = worktree.load(Path(state.meta_dir) if state.meta_dir else None)
    return walk(str(top), extras.skips, frozenset(extras.git_dirs))


def current_tree(top: Path, store: Path, state: RepoState, found: Walk | None = None) -> str:
    """The working tree as it is now, as a tree in the store; works even after the agent removed `.git`.

    Paths ignored when `state` was recorded stay out (they are the user's, whatever `.gitignore` says now).
    """
    return snapshot(top, store, found or current_walk(top, state), object_format=state.object_format)


def diff(top: Path, store: Path, old_tree: str, new_tree: str, *, stat: bool = False) -> str:
    """`git diff` between two recorded trees (binary-safe patch, or `--stat` with `stat=True`)."""
    env = {"GIT_DIR": str(store)}
    args = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames"]
    args += ["--stat=100"] if stat else ["--binary", "--full-index"]
    return git(top, *args, old_tree, new_tree, env=env).stdout.decode(errors="replace")


def _pointer(top: Path, rel: str, meta_dir: Path) -> Pointer:
    path = top / rel
    if path.is_symlink():
        return Pointer(rel=rel, kind="symlink", target=os.readlink(path))
    if path.is_file():
        saved = meta_dir / "pointers" / _key(rel)
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_bytes(path.read_bytes())
        return Pointer(rel=rel, kind="file", data=str(saved))
    return Pointer(rel=rel, kind="dir" if path.is_dir() else "missing")


def _save_git_dirs(top: Path, store: Path, meta_dir: Path, repos: list[RepoPaths], fmt: str,
                   data: list[GitData], stores: dict[str, str]) -> tuple[list[GitData], dict[str, str]]:
    """Add to `data` each git dir of `repos` not saved yet (one inside another is saved with it) and copy
    every object folder found in them to a store: the top's objects to `store`, each other one to its own."""
    saved = [d.path for d in data]
    roots: list[str] = []
    for paths in repos:
        for path in (paths.common_dir, paths.git_dir):
            real = os.path.realpath(path)
            if real not in roots:
                roots.append(real)
    roots.sort(key=len)
    kept = [r for n, r in enumerate(roots)
            if r not in saved and not any(r.startswith(o + os.sep) for o in saved + roots[:n])]
    top_objects = next(iter(stores), None) or os.path.realpath(repos[0].objects)
    for root in kept:
        folder = meta_dir / "git" / str(len(data))
        inside = root == str(top.resolve()) or root.startswith(str(top.resolve()) + os.sep)
        data.append(GitData(path=root, folder=str(folder), anchor=str(top.resolve()) if inside else str(Path(root).parent)))
        for rel in gitmeta.save(Path(root), folder):
            objects = os.path.realpath(os.path.join(root, rel, "objects"))
            target = store if objects == top_objects else store.with_name(f"objects-{_key(objects)}.git")
            if target != store:
                ensure_store(target, fmt)
                copy_objects(Path(objects), target / "objects")
            stores[objects] = str(target)
    stores.setdefault(top_objects, str(store))
    return data, stores


def _key(path: str) -> str:
    return hashlib.sha256(path.encode(errors="surrogateescape")).hexdigest()[:16]


def _copy_excludes(common_dir: Path, store: Path) -> None:
    """The repository's `info/exclude` as the store's, so leaf's snapshots ignore what the user's git ignores."""
    src = common_dir / "info" / "exclude"
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


def _write_tree(top: Path, env: dict[str, str]) -> str | None:
    proc = git(top, "write-tree", env=env, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def _refs(top: Path) -> dict[str, str]:
    listing = out(top, "for-each-ref", "--format=%(objectname) %(refname)", check=False)
    return {name: sha for sha, name in (line.split(" ", 1) for line in listing.splitlines() if " " in line)}
