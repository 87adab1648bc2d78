"""A task's start state on disk: the repository at `base_commit`, extracted once and cached.

Workspaces are copies of that snapshot made into a fresh repository with a single commit, so an agent
cannot read later commits (the fix) through git.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.tasks.envs.cache import cache_key, cache_root, locked
from leaf_cli.tasks.format.globs import matcher, tree_files
from leaf_cli.tasks.envs.proc import run_process
from leaf_cli.tasks.format.task import Task

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "leaf", "GIT_AUTHOR_EMAIL": "leaf@localhost", "GIT_COMMITTER_NAME": "leaf",
    "GIT_COMMITTER_EMAIL": "leaf@localhost", "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
}
"""A fixed identity and date: every workspace of a task gets the same start commit id."""

IGNORED = "__pycache__/\n*.pyc\n.pytest_cache/\n*.egg-info/\n.leaf/\n"
"""Build litter never counted as part of a patch."""


def git(args: list[str], cwd: Path, timeout: float = 300, stdin: str | None = None) -> str:
    """Run git with leaf's fixed identity; its whole stdout is returned (a diff must not be cut).
    A failure is a LeafError carrying git's message."""
    result = run_process(["git", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null", *args],
                         cwd=cwd, timeout=timeout, env=GIT_IDENTITY, stdin=stdin, keep=None)
    if not result.ok:
        raise LeafError(f"git {' '.join(args[:3])} failed in {cwd}: {result.stderr.strip()[-400:]}")
    return result.stdout


def snapshot(task: Task, base_dir: Path | None = None) -> Path:
    """The cached, extracted tree of `task.repo` at `task.base_commit` (do not modify it)."""
    location = task.repo_location(base_dir)
    root = cache_root() / "snapshots" / cache_key(location, task.base_commit)
    tree = root / "tree"
    with locked(root.with_suffix(".lock")):
        if not (root / "ready").exists():
            shutil.rmtree(root, ignore_errors=True)
            tree.mkdir(parents=True)
            _extract(_repo_dir(location, task.base_commit), task.base_commit, tree)
            (root / "ready").write_text(task.base_commit + "\n")
    return tree


def single_commit_repo(src: Path, dest: Path, drop: list[str] = ()) -> str:
    """Copy `src` to `dest`, remove paths matching `drop`, commit it all as the only commit. Returns its id."""
    shutil.copytree(src, dest, symlinks=True)
    hidden = matcher(list(drop))
    for rel in list(tree_files(dest)):
        if hidden(rel):
            (dest / rel).unlink()
    git(["init", "-q", "-b", "main"], dest)
    (dest / ".git" / "info").mkdir(exist_ok=True)
    (dest / ".git" / "info" / "exclude").write_text(IGNORED, encoding="utf-8")
    git(["add", "-A", "-f", "."], dest)
    git(["commit", "-q", "--no-verify", "--allow-empty", "-m", "start"], dest)
    return git(["rev-parse", "HEAD"], dest).strip()


def _repo_dir(location: str, commit: str) -> Path:
    """A local repository as is; a URL or a git bundle file (`git bundle create`, one file a task file can
    ship beside it) cloned bare into the cache once, and fetched when the commit is missing."""
    if "://" not in location and not location.startswith("git@"):
        path = Path(location)
        if path.is_file() and path.suffix == ".bundle":
            return _mirror(location, commit)
        if not path.is_dir():
            raise LeafError(f"task repository not found: {location}")
        return path
    return _mirror(location, commit)


def _mirror(location: str, commit: str) -> Path:
    mirror = cache_root() / "repos" / (cache_key(location) + ".git")
    with locked(mirror.with_suffix(".lock")):
        if not mirror.exists():
            git(["clone", "-q", "--bare", location, str(mirror)], cache_root(), timeout=1800)
        try:
            git(["cat-file", "-e", f"{commit}^{{commit}}"], mirror)
        except LeafError:
            git(["fetch", "-q", "origin", commit], mirror, timeout=1800)
    return mirror


def _extract(repo: Path, commit: str, dest: Path) -> None:
    """`git archive` the commit to a tar beside `dest` and unpack it there."""
    archive = dest.parent / "tree.tar"
    made = run_process(["git", "archive", "--format=tar", f"--output={archive}", commit], cwd=repo, timeout=600,
                       env=GIT_IDENTITY)
    if not made.ok:
        raise LeafError(f"cannot read commit {commit} of {repo}: {made.stderr.strip()[-300:]}")
    unpacked = run_process(["tar", "-xf", str(archive), "-C", str(dest)], cwd=dest, timeout=600)
    archive.unlink()
    if not unpacked.ok:
        raise LeafError(f"cannot unpack commit {commit} of {repo}: {unpacked.stderr.strip()[-300:]}")
