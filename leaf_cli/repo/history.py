"""What an undo leaves reachable: the commit of an undone committed run, and what `undo --force` overwrote.

Both are refs under refs/leaf/ in the user's repository (git keeps their objects, `git log --all` shows
them), made with a reflog message so `git reflog` says where they came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from leaf_cli.repo.checkpoint import current_tree, locate
from leaf_cli.repo.git import git, out, user_identity
from leaf_cli.repo.runs import RunRecord
from leaf_cli.repo.store import copy_objects

_FALLBACK_IDENTITY = {"GIT_AUTHOR_NAME": "leaf", "GIT_AUTHOR_EMAIL": "leaf@localhost",
                      "GIT_COMMITTER_NAME": "leaf", "GIT_COMMITTER_EMAIL": "leaf@localhost"}


@dataclass
class Undone:
    """What one undo did, for its message."""

    was: str
    dropped: list[tuple[str, str]] = field(default_factory=list)
    saved: tuple[str, str] | None = None
    kept_commit: tuple[str, str] | None = None


def save_current(run: RunRecord) -> str:
    """The work tree as it is now (tracked and untracked files, not ignored ones) as a commit whose parent is
    HEAD, made in the store; `pin` then makes it reachable in the repository. Returns its id."""
    top, store = Path(run.top), Path(run.store)
    paths = locate(top)
    head = ""
    if paths is not None:
        copy_objects(paths.objects, store / "objects")  # HEAD's commit may be newer than the last checkpoint
        head = out(top, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    tree = current_tree(top, store, run.before)
    env = {"GIT_DIR": str(store), **_FALLBACK_IDENTITY, **user_identity(top)}
    parents = ["-p", head] if head else []
    message = f"leaf: the work tree that `leaf undo --force` of run {run.run_id} overwrote"
    return out(top, "commit-tree", "--no-gpg-sign", tree, *parents, "-m", message, env=env)


def pin(run: RunRecord, ref: str, sha: str, message: str) -> tuple[str, str]:
    """Point `ref` at `sha` in the run's repository (copying the object from the store if it lacks it)."""
    top, store = Path(run.top), Path(run.store)
    paths = locate(top)
    if paths is not None and git(top, "cat-file", "-e", sha, check=False).returncode != 0:
        copy_objects(store / "objects", paths.objects)
    git(top, "update-ref", "-m", message, ref, sha)
    return ref, sha
