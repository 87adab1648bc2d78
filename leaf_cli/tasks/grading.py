"""Grade a patch in a fresh copy: apply it, restore protected and hidden files, apply the test patch, run
F2P and P2P by node id, and decide. Resolved = every F2P passed and every P2P passed or skipped
(SWE-bench v5: a skipped F2P fails, a skipped P2P is maintained). A run with no evidence that the suite
ran is an infrastructure failure: labelled, counted, never dropped.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field

from leaf_cli.errors import LeafError
from leaf_cli.tasks.env import EnvBuildError, Environment, get_env
from leaf_cli.tasks.globs import matcher, tree_files
from leaf_cli.tasks.patches import Applied, apply_patch
from leaf_cli.tasks.proc import run_process
from leaf_cli.tasks.sandbox import Sandbox, make_sandbox
from leaf_cli.tasks.source import single_commit_repo, snapshot
from leaf_cli.tasks.task import Task
from leaf_cli.tasks.testrun import GOOD, TestRun, run_tests


class GradeResult(BaseModel):
    """The verdict on one patch for one task."""

    instance_id: str
    resolved: bool
    patch_applied: Applied
    apply_log: str = ""
    restored: list[str] = Field(default_factory=list, description="Protected/hidden paths put back.")
    f2p: dict[str, str] = Field(default_factory=dict, description="FAIL_TO_PASS node id -> outcome.")
    p2p: dict[str, str] = Field(default_factory=dict, description="PASS_TO_PASS node id -> outcome.")
    exit_code: int | None = None
    infra_failure: str | None = Field(None, description="env_build, source, test_patch, no_report, no_tests.")
    error: str | None = Field(None, description="Why it is unresolved beyond test outcomes.")
    test_seconds: float = 0.0
    sandbox: str = ""

    @property
    def f2p_passed(self) -> int:
        return sum(o in GOOD for o in self.f2p.values())

    @property
    def p2p_passed(self) -> int:
        return sum(o in GOOD or o == "skipped" for o in self.p2p.values())


def grade(task: Task, patch: str, sandbox: Sandbox | None = None, *, base_dir: Path | None = None,
          env: Environment | None = None) -> GradeResult:
    """Grade `patch` (a unified diff against the task's start state) for `task`. Never raises for a bad
    patch or a broken environment: those come back as an unresolved, labelled result."""
    sandbox = (sandbox or make_sandbox(None)).for_task(task)
    verdict = GradeResult(instance_id=task.instance_id, resolved=False, patch_applied=Applied.EMPTY,
                          sandbox=sandbox.name)
    try:
        env = env or get_env(task, base_dir)
        pristine = snapshot(task, base_dir)
    except EnvBuildError as exc:
        return verdict.model_copy(update={"infra_failure": "env_build", "error": str(exc)})
    except LeafError as exc:
        return verdict.model_copy(update={"infra_failure": "source", "error": str(exc)})
    with tempfile.TemporaryDirectory(prefix="leaf-grade-") as tmp:
        tree, scratch = Path(tmp) / "tree", Path(tmp) / "scratch"
        scratch.mkdir()
        single_commit_repo(pristine, tree)
        verdict.patch_applied, verdict.apply_log = apply_patch(patch, tree, pristine)
        if verdict.patch_applied == Applied.FAILED:
            verdict.error = "the patch does not apply"
            return verdict
        verdict.restored = restore_paths(tree, pristine, task.protected + task.hidden_paths)
        if task.test_patch.strip():
            applied = run_process(["git", "apply", "--whitespace=nowarn", "-"], cwd=tree, timeout=120,
                                  stdin=task.test_patch if task.test_patch.endswith("\n") else task.test_patch + "\n")
            if not applied.ok:
                verdict.infra_failure, verdict.error = "test_patch", f"test_patch does not apply: {applied.stderr.strip()[-300:]}"
                return verdict
        run = run_tests(tree, scratch, task.tests, env, sandbox, task.timeouts.test_s)
    return decide(task, verdict, run)


def decide(task: Task, verdict: GradeResult, run: TestRun) -> GradeResult:
    """Fill the outcomes and the verdict from a test run."""
    verdict.f2p = {nid: run.outcomes[nid] for nid in task.FAIL_TO_PASS}
    verdict.p2p = {nid: run.outcomes[nid] for nid in task.PASS_TO_PASS}
    verdict.exit_code, verdict.test_seconds = run.exit_code, run.seconds
    if run.timed_out:
        verdict.error = f"tests timed out after {task.timeouts.test_s:.0f} s"
    elif not run.started or not run.finished:
        verdict.infra_failure = "no_report"
        verdict.error = "no evidence the test suite ran: " + (run.output_tail.strip()[-300:] or "no output")
    elif run.reported_exit != run.exit_code:
        verdict.infra_failure = "no_report"
        verdict.error = f"pytest exited {run.exit_code} but its report says {run.reported_exit}"
    elif run.selected == 0:
        verdict.infra_failure = "no_tests"
        verdict.error = "none of the task's node ids was collected"
    all_good = verdict.f2p_passed == len(verdict.f2p) and verdict.p2p_passed == len(verdict.p2p)
    if all_good and verdict.error is None and run.exit_code not in (0, None):
        verdict.error = f"every test passed but pytest exited {run.exit_code}"  # v5's exit-code cross-check
    verdict.resolved = all_good and verdict.error is None and verdict.infra_failure is None
    return verdict


def restore_paths(tree: Path, pristine: Path, patterns: list[str]) -> list[str]:
    """Put every file matching `patterns` back as in `pristine`; delete matching files it lacks."""
    is_kept = matcher(patterns)
    changed = []
    for rel in tree_files(tree):
        if is_kept(rel) and not (pristine / rel).exists() and not (pristine / rel).is_symlink():
            (tree / rel).unlink()
            changed.append(rel)
    for rel in tree_files(pristine):
        if not is_kept(rel):
            continue
        target, source = tree / rel, pristine / rel
        if target.is_symlink() or not target.exists() or target.read_bytes() != source.read_bytes():
            if target.is_symlink() or target.exists():
                target.unlink() if not target.is_dir() or target.is_symlink() else shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
            changed.append(rel)
    return sorted(set(changed))
