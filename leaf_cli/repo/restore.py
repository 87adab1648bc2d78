"""Put a recorded state back exactly, trusting nothing the agent left in the repository.

Every path undo writes comes from the checkpoint, recorded while the repository was still the user's:
the `.git` entries of the work tree, each git dir (written back as data, gitmeta), each object folder. No
git command of undo runs against the repository's own git dir until that git dir is the recorded one again,
so a planted `commondir`, a `gitdir:` file or a symlinked `.git/index` is removed, never followed. What
the run made that may hold data leaf did not record (a git dir it moved, a new nested repository's `.git`,
a file where a folder was) is moved aside into leaf's state folder and reported, never deleted. A path that
was ignored when the run started stays, whatever the agent did to `.gitignore`.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.repo import gitmeta, ignored, safefs, worktree
from leaf_cli.repo.checkpoint import RepoState, current_tree, current_walk, tree_env
from leaf_cli.repo.git import GitError, git
from leaf_cli.repo.refs import read_refs
from leaf_cli.repo.snapshot import GITLINK, marker_kinds
from leaf_cli.repo.store import copy_objects
from leaf_cli.repo.walk import Walk


@dataclass
class RestoreReport:
    dropped: list[tuple[str, str]] = field(default_factory=list)
    """Refs made since the record and removed (name, object): `git update-ref` brings one back."""
    moved: list[tuple[str, str]] = field(default_factory=list)
    """What undo would not delete and moved aside: (where it was, where it is now)."""
    not_recreated: list[str] = field(default_factory=list)
    """Sockets and devices the checkpoint had: leaf cannot make them again."""
    removed_ignored: list[str] = field(default_factory=list)
    """What the run made in folders ignored at the start, removed (a folder ends with '/')."""


def restore(top: Path, store: Path, state: RepoState, keep_refs: tuple[str, ...] = (),
            aside: safefs.Aside | None = None) -> RestoreReport:
    """Make the work tree at `top` and its repositories exactly `state` again, then check that it is."""
    if state.git_dir is None or not state.git_data:
        raise LeafError("this run was recorded by an older leaf, whose checkpoint trusted the repository's own "
                        "git dir; restore it by hand with git, or run leaf again")
    state = _relocated(state, top)
    aside = aside or safefs.default_aside(store.parent.parent)
    report = RestoreReport()
    common = Path(state.common_dir or state.git_dir)
    now = read_refs(common, Path(state.git_dir))
    report.dropped = sorted((n, sha) for n, sha in now.items() if n not in state.refs and n not in keep_refs)
    kept = {n: sha for n, sha in now.items() if n in keep_refs and n not in state.refs}
    top_path = Path(state.top or top)
    _restore_pointers(top_path, state, aside)
    _move_aside_unrecorded(top_path, state, current_walk(top_path, state), aside)
    for data in state.git_data:
        gitmeta.restore(Path(data.path), Path(data.folder), Path(data.anchor), aside)
    for objects, source in state.stores.items():
        anchor = next((Path(d.anchor) for d in state.git_data if objects.startswith(d.path + os.sep)), Path(objects).parent)
        safefs.ensure_dir(Path(objects), anchor, aside)
        copy_objects(Path(source) / "objects", Path(objects), alternates=False)
    for name, sha in kept.items():  # made by leaf's review for the user (a new branch): theirs now
        git(top_path, "update-ref", "-m", "leaf undo: kept, made by leaf's review", name, sha,
            env={"GIT_DIR": state.git_dir})
    meta = Path(state.meta_dir) if state.meta_dir else None
    report.removed_ignored = ignored.remove_created(top_path, meta, aside)  # after the git dirs: none is in reach
    extras = worktree.load(meta)
    report.not_recreated = _restore_files(top_path, store, state, extras)
    _refresh_indexes(top_path, store, state)
    now_tree = current_tree(top_path, store, state)
    if now_tree != state.worktree_tree:
        raise GitError(f"restore incomplete: working tree is {now_tree}, expected {state.worktree_tree}")
    report.moved = aside.moved
    return report


def _relocated(state: RepoState, top: Path) -> RepoState:
    """`state` with its paths moved under `top` when it is restored somewhere else (replay's copy)."""
    old, new = state.top or str(top.resolve()), str(top.resolve())
    if old == new:
        return state

    def move(path: str) -> str:
        if path == old or path.startswith(old + os.sep):
            return new + path[len(old):]
        raise LeafError(f"this run's repository keeps its git data outside the work tree ({path}), so it "
                        "cannot be restored into a copy; pass --workdir")

    return state.model_copy(update={
        "top": new, "git_dir": move(state.git_dir or ""), "common_dir": move(state.common_dir or state.git_dir or ""),
        "git_data": [d.model_copy(update={"path": move(d.path), "anchor": move(d.anchor)}) for d in state.git_data],
        "stores": {move(k): v for k, v in state.stores.items()},
        "nested": [n.model_copy(update={"git_dir": move(n.git_dir)}) for n in state.nested]})


def _restore_pointers(top: Path, state: RepoState, aside: safefs.Aside) -> None:
    """Each recorded `.git` entry as it was: a folder, a `gitdir:` file with its bytes, or a link."""
    for pointer in state.pointers:
        path = top / pointer.rel
        safefs.ensure_dir(path.parent, top, aside)
        what = safefs.kind(path)
        if pointer.kind == "file" and pointer.data and safefs.same_file(path, Path(pointer.data)):
            continue
        if pointer.kind == "symlink" and what == "symlink" and os.readlink(path) == pointer.target:
            continue
        if pointer.kind == what == "dir":
            continue
        if what in ("dir", "file"):
            aside.move(path)  # may be data (a git dir, a file the agent wrote): not leaf's to delete
        elif what != "missing":
            os.unlink(path)
        if pointer.kind == "file" and pointer.data:
            safefs.write_copy(Path(pointer.data), path, 0o644)
        elif pointer.kind == "symlink" and pointer.target is not None:
            os.symlink(pointer.target, path)
        elif pointer.kind == "dir":
            path.mkdir()


def _move_aside_unrecorded(top: Path, state: RepoState, found: Walk, aside: safefs.Aside) -> None:
    """A `.git` of a repository the run made, a git dir it moved: moved aside, so the rest can go."""
    recorded = {p.rel for p in state.pointers}
    for rel in found.repos:
        if f"{rel}/.git" not in recorded:
            aside.move(top / rel / ".git")
    for rel in found.git_dirs:
        aside.move(top / rel)


def _restore_files(top: Path, store: Path, state: RepoState, extras: worktree.WorktreeExtras) -> list[str]:
    """Delete what the run added, then write back every path whose content, mode or type differs."""
    now = current_tree(top, store, state)
    raw = git(top, "diff-tree", "-r", "-z", "--no-renames", state.worktree_tree, now, env={"GIT_DIR": str(store)}).stdout
    fields = raw.split(b"\0")
    to_write: list[str] = []
    specials: dict[str, str] = {}
    kinds = marker_kinds(state.object_format)
    for header, path_bytes in zip(fields[0::2], fields[1::2]):
        old_mode, new_mode, old_id, _new, _status = header.decode().lstrip(":").split(" ")
        path = os.fsdecode(path_bytes)
        if new_mode != "000000" and not (old_mode == "000000" and extras.was_ignored(path)):
            _remove(top, path, extras)
        if old_mode == GITLINK:
            specials[path] = kinds.get(old_id, "special file")
        elif old_mode != "000000":
            to_write.append(path)
    with tempfile.TemporaryDirectory(prefix="leaf-index-") as tmp:
        scratch_env = tree_env(store, top, Path(tmp) / "index")
        git(top, "read-tree", state.worktree_tree, env=scratch_env)
        if to_write:
            git(top, "checkout-index", "-f", "-z", "--stdin", env=scratch_env,
                input=b"\0".join(os.fsencode(p) for p in to_write))
        lost = [rel for rel, kind in specials.items() if not _make_special(top, rel, kind)]
        worktree.apply(top, scratch_env, state.worktree_tree, extras, current_walk(top, state))
    return lost


def _remove(top: Path, rel: str, extras: worktree.WorktreeExtras) -> None:
    """Remove one entry the recorded state did not have, and the folders it leaves empty (unless recorded)."""
    target = top / rel
    safefs.remove(target)
    parent = target.parent
    keep = set(extras.empty_dirs)
    while parent != top and safefs.kind(parent) == "dir" and not any(parent.iterdir()):
        if os.path.relpath(parent, top).replace(os.sep, "/") + "/" in keep:
            break
        parent.rmdir()
        parent = parent.parent


def _make_special(top: Path, rel: str, kind: str) -> bool:
    """A FIFO the checkpoint had, made again; False for what cannot be made (a socket, a device)."""
    if kind != "fifo":
        return False
    path = top / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return True


def _refresh_indexes(top: Path, store: Path, state: RepoState) -> None:
    """The files were just rewritten, so each index's stat data is stale: refresh it (content untouched),
    with a store as git dir so the repository's fsmonitor and filters do not run."""
    repos = [("", state.git_dir or "", store)] + [(n.root, n.git_dir, Path(n.store)) for n in state.nested]
    for root, git_dir, repo_store in repos:
        index = Path(git_dir) / "index"
        if safefs.kind(index) == "file":
            try:
                git(top / root if root else top, "update-index", "-q", "--refresh",
                    env=tree_env(repo_store, top / root if root else top, index), check=False)
            except (GitError, subprocess.SubprocessError):
                pass  # a stale stat cache only makes the user's next `git status` slower
