"""Snapshots: a repository state with a built environment and a recorded, passing test baseline.

Each snapshot lives in OUT/repos/<id>, a git repository whose root commit is the clean state (one commit,
no upstream history). Every task's start state is a commit on top of it, so a task file names
`repo: repos/<id>` and `base_commit: <task commit>` and `leaf eval` can rebuild it anywhere.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from leaf_cli.errors import LeafError
from leaf_cli.executor.artifacts import rebased
from leaf_cli.tasks import (GIT_IDENTITY, EnvBuildError, Environment, InstallConfig, Sandbox, Task, get_env,
                            run_process, single_commit_repo)
from leaf_train.taskpilot.sources import SourceTree
from leaf_train.taskpilot.suite import run_suite


class Snapshot(BaseModel):
    """A usable snapshot (status ok) or one reported and skipped (status skipped, with the reason)."""

    id: str
    spec: str
    status: str = "ok"
    reason: str | None = None
    repo: str = Field("", description="Relative to the run folder: repos/<id>.")
    commit: str = ""
    package: str = ""
    version: str = ""
    source: dict[str, Any] = Field(default_factory=dict)
    install_config: dict[str, Any] = Field(default_factory=dict)
    tests: list[str] = Field(default_factory=list, description="The suite restriction in force (empty: all).")
    passing: list[str] = Field(default_factory=list, description="Node ids passing on the clean state.")
    suite_seconds: float = 0.0

    def task(self, out: Path, **fields: Any) -> Task:
        """A Task on this snapshot (the clean commit unless `base_commit` is given)."""
        base = {"instance_id": self.id, "repo": str((out / self.repo).resolve()), "base_commit": self.commit,
                "problem_statement": "", "patch": "", "FAIL_TO_PASS": [], "version": self.version,
                "install_config": InstallConfig(**self.install_config)}
        return Task(**{**base, **fields})


def snapshot_repo(cache: Path, src_id: str) -> Path:
    """Where a source's snapshot repository lives: in the cache, so runs sharing a cache share it and its
    environment (the environment cache is keyed by the repository's location)."""
    return (cache / "repos" / src_id).resolve()


def build_snapshot(src: SourceTree, out: Path, cache: Path, sandbox: Sandbox, *, tests: list[str], budget_s: float,
                   pip_packages: list[str]) -> tuple[Snapshot, dict[str, list[tuple[str, int, str]]]]:
    """Make the snapshot repository in the cache, build its environment, run its suite once with coverage tracing."""
    return build_snapshot_at(src, out, snapshot_repo(cache, src.id), sandbox, tests=tests, budget_s=budget_s,
                             pip_packages=pip_packages)


def build_snapshot_job(src: SourceTree, run_dir: Path, sandbox: Sandbox, *, tests: list[str], budget_s: float,
                       pip_packages: list[str], out: Path) -> tuple[Snapshot, dict[str, list[tuple[str, int, str]]]]:
    """`build_snapshot_at` as an executor job: the repository is made in the job's output folder `out` (on a
    Ray worker a scratch folder of its node, shipped back into the driver's cache with the value)."""
    return build_snapshot_at(src, run_dir, out, sandbox, tests=tests, budget_s=budget_s, pip_packages=pip_packages)


def rebase_snapshot(value: tuple[Snapshot, dict], old: Path, new: Path, *, run_dir: Path) -> tuple[Snapshot, dict]:
    """The job's snapshot pointed at the repository's place in the driver's cache (relative to the run folder
    when inside it, as `build_snapshot` records it)."""
    snap, cover = value
    return snap.model_copy(update={"repo": _relative(Path(rebased(snap.repo, old, new) or ""), run_dir)}), cover


def build_snapshot_at(src: SourceTree, out: Path, repo: Path, sandbox: Sandbox, *, tests: list[str], budget_s: float,
                      pip_packages: list[str]) -> tuple[Snapshot, dict[str, list[tuple[str, int, str]]]]:
    """Make the snapshot repository at `repo` (kept when it exists), build its environment, run its suite once
    with coverage tracing.

    Returns the snapshot (skipped, with the reason, when the suite does not run or is over budget) and
    the coverage map (node id -> functions it calls), which the procedural generator needs.
    """
    repo = repo.resolve()
    snap = Snapshot(id=src.id, spec=src.spec, repo=_relative(repo, out), package=src.package, version=src.version,
                    source=src.source, tests=list(tests),
                    install_config={**src.install_config, "pip_packages": [*src.install_config.get("pip_packages", []), *pip_packages]})
    if not (repo / ".git").exists():
        shutil.rmtree(repo, ignore_errors=True)
        repo.parent.mkdir(parents=True, exist_ok=True)
        snap.commit = single_commit_repo(src.tree, repo, drop=[".unpacked"])
    else:
        snap.commit = git_out(repo, "rev-list", "--max-parents=0", "HEAD").split()[0]
    try:
        env = get_env(snap.task(out))
    except (EnvBuildError, LeafError) as exc:
        return snap.model_copy(update={"status": "skipped", "reason": f"environment: {exc}"}), {}
    with tempfile.TemporaryDirectory(prefix="taskpilot-base-") as tmp:
        tree = Path(tmp) / "tree"
        export(repo, snap.commit, tree)
        result = run_suite(tree, env, sandbox, tests=tests, timeout=budget_s * 2, trace=True)
    if not result.ran():
        return snap.model_copy(update={"status": "skipped", "reason": f"suite does not run: {result.error}"}), {}
    if result.seconds > budget_s:
        reason = f"suite takes {result.seconds:.1f} s, over the budget of {budget_s:.0f} s"
        return snap.model_copy(update={"status": "skipped", "reason": reason}), {}
    snap.passing = sorted(result.passing())
    snap.suite_seconds = result.seconds
    if not snap.passing:
        return snap.model_copy(update={"status": "skipped", "reason": "no test passes on the clean state"}), {}
    return snap, {t: c for t, c in result.cover.items() if t in result.passing()}


def _relative(path: Path, out: Path) -> str:
    """`path` relative to the run folder when inside it (a movable run folder), else absolute."""
    try:
        return str(path.relative_to(out.resolve()))
    except ValueError:
        return str(path)


def environment(snap: Snapshot, out: Path) -> Environment:
    """The snapshot's cached environment (built by `build_snapshot`; a lookup afterwards)."""
    return get_env(snap.task(out))


def git_out(repo: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    result = run_process(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=repo, timeout=300,
                         env={**GIT_IDENTITY, **(env or {})}, stdin=stdin)
    if not result.ok:
        raise LeafError(f"git {args[0]} failed in {repo}: {result.stderr.strip()[-300:]}")
    return result.stdout


def export(repo: Path, commit: str, dest: Path) -> None:
    """The files of `commit` into a new folder `dest` (no .git)."""
    dest.mkdir(parents=True)
    archive = dest.parent / f".{dest.name}.tar"
    git_out(repo, "archive", "--format=tar", f"--output={archive}", commit)
    run_process(["tar", "-xf", str(archive), "-C", str(dest)], cwd=dest, timeout=300)
    archive.unlink()


def commit_tree(repo: Path, parent: str, tree: Path, message: str) -> str:
    """Commit the files under `tree` into `repo` as a child of `parent`, without touching the repo's
    checkout or index (a private index file), and keep it reachable under refs/taskpilot/. Returns the id."""
    with tempfile.TemporaryDirectory(prefix="taskpilot-index-") as tmp:
        env = {"GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(tree), "GIT_INDEX_FILE": os.path.join(tmp, "index")}
        git_out(tree, "add", "-A", "-f", ".", ":!.leaf", ":!**/__pycache__/**", env=env)
        tree_id = git_out(tree, "write-tree", env=env).strip()
        commit = git_out(tree, "commit-tree", tree_id, "-p", parent, "-m", message, env=env).strip()
        git_out(tree, "update-ref", f"refs/taskpilot/{commit}", commit, env=env)
    return commit
