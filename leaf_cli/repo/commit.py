"""Turn a run's changes into a commit, on the current branch or a new one, without touching other work.

The commit is the run's own patch applied to HEAD in a scratch index, so changes the user had in flight
before the run stay uncommitted (and in place) either way.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.repo.git import GitError, git, out, user_identity


def commit_patch(top: Path, patch: str, message: str) -> str:
    """Make a commit of `patch` on top of HEAD (not moving anything yet) and return its id."""
    if not patch.strip():
        raise LeafError("the run changed nothing; there is nothing to commit")
    if not re.search(r"^diff --git ", patch, re.M):
        raise LeafError("every change of the run was left out of the patch (files too large, or FIFOs); "
                        "commit them yourself with git")
    if not message.strip():
        raise LeafError("the commit message is empty")
    head = out(top, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False) or None
    with tempfile.TemporaryDirectory(prefix="leaf-commit-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if head:
            git(top, "read-tree", head, env=env)
        applied = git(top, "apply", "--cached", "--binary", "-", env=env, input=patch.encode(), check=False)
        if applied.returncode != 0:
            raise LeafError("the run's changes overlap edits you had before the run, so they do not apply to HEAD "
                            "alone; commit them yourself with git")
        tree = out(top, "write-tree", env=env)
    parents = ["-p", head] if head else []
    try:
        return out(top, "commit-tree", "--no-gpg-sign", tree, *parents, "-m", message, env=user_identity(top))
    except GitError as exc:
        raise LeafError(f"git could not make the commit ({exc}); is user.name/user.email configured?") from None


def commit_on_branch(top: Path, patch: str, message: str) -> str:
    """Commit the run's changes on the current branch and stage them as committed; return the commit id."""
    head = out(top, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    commit = commit_patch(top, patch, message)
    git(top, "update-ref", "-m", "leaf: commit run", "HEAD", commit, head or "0" * len(commit))
    paths = patch_paths(patch)
    if paths:
        # Those paths' index entries become the new HEAD's; other staged work the user had stays staged.
        git(top, "reset", "-q", "HEAD", "--", *paths, check=False)
    return commit


def check_new_branch(top: Path, branch: str) -> None:
    """LeafError unless `branch` is a valid name no branch has yet."""
    if not branch or git(top, "check-ref-format", "--branch", branch, check=False).returncode != 0:
        raise LeafError(f"{branch!r} is not a valid branch name")
    if git(top, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False).returncode == 0:
        raise LeafError(f"branch {branch} already exists; pick another name")


def commit_to_new_branch(top: Path, patch: str, message: str, branch: str) -> str:
    """Commit the run's changes on a new branch `branch` (from HEAD); the caller then puts this branch back."""
    check_new_branch(top, branch)
    commit = commit_patch(top, patch, message)
    git(top, "update-ref", "-m", "leaf: move run to a new branch", f"refs/heads/{branch}", commit, "")
    return commit


def patch_paths(patch: str) -> list[str]:
    """Paths a git patch touches (both sides of each `diff --git` header, deduplicated)."""
    paths: list[str] = []
    for match in re.finditer(r"^diff --git a/(.+?) b/(.+)$", patch, re.M):
        for path in match.groups():
            if path not in paths:
                paths.append(path)
    return paths


def draft_message(final_answer: str, task: str) -> str:
    """A commit message from the model's final answer: its first line, whole, as the subject; the rest of the
    answer as the body (the subject is not said twice).

    The subject is never cut mid-word (a cut subject reads as a broken message); the task's first line
    stands in when the model gave no answer.
    """
    source = final_answer.strip() or task.strip()
    lines = source.splitlines()
    at = next((i for i, line in enumerate(lines) if line.strip(" #*-")), None)
    if at is None:
        return "Changes by leaf"
    subject = " ".join(lines[at].strip(" #*-").split())
    body = "\n".join(lines[at + 1:]).strip() if final_answer.strip() else ""
    return f"{subject}\n\n{body}" if body else subject
