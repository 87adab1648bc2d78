"""What an undo leaves reachable: the commit of an undone committed run, and what `undo --force` overwrote.

Both are refs under refs/leaf/ in the user's repository (git keeps their objects, `git log --all` shows
them), made with a reflog message so `git reflog` says where they came from. Like the restore itself,
nothing here trusts the repository before undo has put its recorded git dir back: the overwritten work
tree is read into leaf's store and HEAD is read as files first; the commit and the refs are made after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from leaf_cli.repo.checkpoint import current_tree
from leaf_cli.repo.git import git, out, user_identity
from leaf_cli.repo.refs import read_head
from leaf_cli.repo.restore import RestoreReport
from leaf_cli.repo.runs import RunRecord
from leaf_cli.repo.store import copy_objects

_FALLBACK_IDENTITY = {"GIT_AUTHOR_NAME": "leaf", "GIT_AUTHOR_EMAIL": "leaf@localhost",
                      "GIT_COMMITTER_NAME": "leaf", "GIT_COMMITTER_EMAIL": "leaf@localhost"}


@dataclass
class Undone:
    """What one undo did, for its message."""

    was: str
    report: RestoreReport = field(default_factory=RestoreReport)
    """What the restore removed (refs made since), moved aside and could not make again."""
    saved: tuple[str, str] | None = None
    kept_commit: tuple[str, str] | None = None


@dataclass(frozen=True)
class Snapshot:
    """The work tree (as a tree in the store) and HEAD's commit, taken before undo overwrites them."""

    tree: str
    head: str | None


def snapshot(run: RunRecord) -> Snapshot:
    """The work tree as it is now (tracked and untracked files, not ignored ones) and HEAD, read without
    trusting the repository: the tree is built in leaf's store, HEAD read as files at the recorded git dir."""
    before = run.before
    tree = current_tree(Path(run.top), Path(run.store), before)
    head = None
    if before.git_dir:
        head, _branch = read_head(Path(before.git_dir), Path(before.common_dir or before.git_dir))
    return Snapshot(tree=tree, head=head)


def save(run: RunRecord, taken: Snapshot) -> str:
    """`taken` as a commit in the repository (HEAD then as its parent, when the repository still has it).
    Called after the restore, when the git dir is the recorded one again. Returns the commit's id."""
    top, env = Path(run.top), _git_dir_env(run)
    _ensure_object(run, taken.tree)
    has_head = taken.head is not None and git(top, "cat-file", "-e", f"{taken.head}^{{commit}}", env=env,
                                              check=False).returncode == 0
    parents = ["-p", taken.head] if has_head and taken.head else []
    message = f"leaf: the work tree that `leaf undo --force` of run {run.run_id} overwrote"
    return out(top, "commit-tree", "--no-gpg-sign", taken.tree, *parents, "-m", message,
               env={**env, **_FALLBACK_IDENTITY, **user_identity(top)})


def pin(run: RunRecord, ref: str, sha: str, message: str) -> tuple[str, str]:
    """Point `ref` at `sha` in the run's repository (copying the object from the store if it lacks it)."""
    _ensure_object(run, sha)
    git(Path(run.top), "update-ref", "-m", message, ref, sha, env=_git_dir_env(run))
    return ref, sha


def _ensure_object(run: RunRecord, sha: str) -> None:
    top, env = Path(run.top), _git_dir_env(run)
    if git(top, "cat-file", "-e", sha, env=env, check=False).returncode != 0:
        common = Path(run.before.common_dir or run.before.git_dir or top / ".git")
        copy_objects(Path(run.store) / "objects", common / "objects", alternates=False)


def _git_dir_env(run: RunRecord) -> dict[str, str]:
    return {"GIT_DIR": run.before.git_dir} if run.before.git_dir else {}
