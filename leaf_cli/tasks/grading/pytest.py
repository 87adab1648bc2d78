"""Leaf's own grading: a fresh copy, the patch applied, protected and hidden files restored, the test patch
applied, F2P and P2P run by node id through leaf's pytest plugin.

Resolved = every F2P passed and every P2P passed (the issue's rule). `p2p_skip_ok=True` also keeps a skipped
P2P test, as SWE-bench v5 does (a skipped F2P always fails). A run with no evidence that the suite ran is an
infrastructure failure: labelled, counted, never dropped.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.tasks.envs.proc import run_process
from leaf_cli.tasks.envs.sandbox import Sandbox
from leaf_cli.tasks.envs.source import single_commit_repo, snapshot
from leaf_cli.tasks.envs.venv import EnvBuildError, Environment, get_env
from leaf_cli.tasks.format.globs import matcher, tree_files
from leaf_cli.tasks.format.task import Task
from leaf_cli.tasks.grading.patches import Applied, apply_patch
from leaf_cli.tasks.grading.testrun import TestRun, run_tests
from leaf_cli.tasks.grading.verdict import GradeResult


def grade_tests(task: Task, patch: str, sandbox: Sandbox, *, base_dir: Path | None = None,
                env: Environment | None = None, p2p_skip_ok: bool = False) -> GradeResult:
    """Leaf's own grading: F2P and P2P by node id in a fresh copy of the start state."""
    sandbox = sandbox.for_task(task)
    verdict = GradeResult(instance_id=task.instance_id, resolved=False, patch_applied=Applied.EMPTY,
                          sandbox=sandbox.name)
    try:
        env = env or get_env(task, base_dir, sandbox)
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
    return decide(task, verdict, run, p2p_skip_ok=p2p_skip_ok)


def decide(task: Task, verdict: GradeResult, run: TestRun, *, p2p_skip_ok: bool = False) -> GradeResult:
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
    all_good = verdict.tests_pass(p2p_skip_ok)
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
