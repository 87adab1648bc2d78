"""Validation of a candidate's code, in the sandbox with no network.

Rules, each with its drop reason: the bug patch applies (bug_patch_does_not_apply); the suite runs within
the budget (suite_does_not_run, suite_over_budget); some test fails on the start state (no_f2p) but not too
many (too_many_f2p); the gold patch applies (gold_patch_does_not_apply) and resolves gold_runs of gold_runs
(gold_fails_f2p, gold_breaks_p2p); the empty patch resolves none (empty_resolves); F2P tests that pass on
the start state in a rerun are flaky (flaky_f2p when none is left); P2P tests whose outcome changes across
runs are dropped from P2P. The gold and empty checks go through the eval machinery's `grade`, the same code
`leaf eval grade --gold/--empty` runs.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from leaf_cli.executor.artifacts import unpack
from leaf_cli.tasks import PASSING_OUTCOMES as GOOD
from leaf_cli.tasks import Applied, Environment, GradeResult, Sandbox, grade, run_process, split_files
from leaf_train.taskpilot.candidate import Candidate, Validation
from leaf_train.taskpilot.config import SynthConfig
from leaf_train.taskpilot.snapshot import Snapshot, commit_tree, export, git_out
from leaf_train.taskpilot.suite import run_suite


class Rejected(Exception):
    """A validation rule failed: `reason` is the funnel's drop reason, the message the detail."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason = reason


def validate(cand: Candidate, snap: Snapshot, out: Path, env: Environment, sandbox: Sandbox,
             cfg: SynthConfig) -> Validation:
    """Check every rule; returns an ok Validation with F2P/P2P and the start commit, or the drop reason."""
    began = time.monotonic()
    record = Validation(candidate=cand.id, code_key=cand.code_key(), ok=False)
    try:
        _check(cand, snap, out, env, sandbox, cfg, record)
        record.ok = True
    except Rejected as exc:
        record.reason, record.detail = exc.reason, str(exc)[:1000]
    record.seconds = round(time.monotonic() - began, 3)
    return record


def validate_job(cand: Candidate, snap: Snapshot, run_dir: Path, env: Environment, sandbox: Sandbox, cfg: SynthConfig,
                 *, out: Path) -> Validation:
    """`validate` as an executor job. Its start-state commit is made in a private clone of the snapshot
    repository, and only what the driver needs of it, the new git objects and the ref that keeps them, is
    written under `out` (`.git/objects/…`, `.git/refs/taskpilot/…`): `out` is the snapshot repository on the
    local executor, a scratch folder on a Ray worker whose files land in the driver's repository."""
    with tempfile.TemporaryDirectory(prefix="taskpilot-clone-") as tmp:
        clone = Path(tmp) / "repo"
        git_out(Path(tmp), "clone", "-q", "--no-checkout", str((run_dir / snap.repo).resolve()), str(clone))
        record = validate(cand, snap.model_copy(update={"repo": str(clone)}), run_dir, env, sandbox, cfg)
        if record.base_commit and record.base_commit != snap.commit:
            unpack(_new_objects(clone, record.base_commit, snap.commit), out)
    return record


def _new_objects(clone: Path, commit: str, base: str) -> dict[str, bytes]:
    """The loose objects of `commit` that `base` lacks, and a ref under refs/taskpilot/ that keeps them."""
    files = {f".git/refs/taskpilot/{commit}": f"{commit}\n".encode()}
    for line in git_out(clone, "rev-list", "--objects", commit, "--not", base).splitlines():
        sha = line.split(" ", 1)[0]
        loose = clone / ".git" / "objects" / sha[:2] / sha[2:]
        if loose.is_file():  # else packed: it came from the repository the clone was made from
            files[f".git/objects/{sha[:2]}/{sha[2:]}"] = loose.read_bytes()
    return files


def _check(cand: Candidate, snap: Snapshot, out: Path, env: Environment, sandbox: Sandbox, cfg: SynthConfig,
           record: Validation) -> None:
    if cand.generator == "llm":
        if not cand.problem_statement.strip():
            raise Rejected("no_statement", "the generator wrote no problem statement")
        if not cand.patch.strip():
            raise Rejected("empty_gold_patch", "the generator changed no library file")
        if not cand.test_patch.strip():
            raise Rejected("no_hidden_tests", "the generator added no test file")
    repo = out / snap.repo
    with tempfile.TemporaryDirectory(prefix="taskpilot-val-") as tmp:
        start = Path(tmp) / "start"
        export(repo, snap.commit, start)
        if cand.bug_patch.strip():
            if apply_diff(cand.bug_patch, start) != "ok":
                raise Rejected("bug_patch_does_not_apply")
            record.base_commit = commit_tree(repo, snap.commit, start, f"taskpilot start state {cand.id}")
        else:
            record.base_commit = snap.commit
        covering = cand.meta.get("covering_tests") or []
        if covering:  # cheap screen: only the tests that call the changed function
            quick = run_suite(start, env, sandbox, tests=covering, timeout=cfg.suite_budget_s)
            if quick.ran() and not (set(covering) - quick.passing()):
                raise Rejected("no_f2p", f"all {len(covering)} tests calling the changed code still pass")
        if cand.test_patch.strip() and apply_diff(cand.test_patch, start) != "ok":
            raise Rejected("test_patch_does_not_apply")
        new_tests = _test_files(cand.test_patch)
        first = run_suite(start, env, sandbox, tests=[*snap.tests, *new_tests] if snap.tests else [],
                          timeout=cfg.suite_budget_s)
        new_ids = _new_test_ids(start, cand, new_tests, env, sandbox, cfg) if new_tests else set()
    if first.timed_out or first.seconds > cfg.suite_budget_s:
        raise Rejected("suite_over_budget", f"{first.seconds:.1f} s > {cfg.suite_budget_s:.0f} s")
    if not first.ran():
        raise Rejected("suite_does_not_run", first.error or "")
    eligible = set(snap.passing) | new_ids
    failing = sorted(t for t in eligible if t not in first.tests or first.tests[t].outcome not in GOOD)
    if cand.test_patch.strip():
        failing = [t for t in failing if t in new_ids]  # F2P must be the new hidden tests
        broken = sorted(t for t in snap.passing if t in first.tests and first.tests[t].outcome not in GOOD)
        if broken:
            raise Rejected("test_patch_breaks_suite", ", ".join(broken[:5]))
    if not failing:
        raise Rejected("no_f2p", "no test fails on the start state")
    if len(failing) > cfg.max_f2p:
        raise Rejected("too_many_f2p", f"{len(failing)} failing tests > {cfg.max_f2p}")
    record.f2p = failing
    record.p2p = sorted(t for t in eligible if t in first.passing())
    record.observations = {t: (first.tests[t].message if t in first.tests else first.collect_errors.get(t.split("::")[0]))
                           or "" for t in failing}
    _grade_checks(cand, snap, out, sandbox, env, cfg, record)


def _grade_checks(cand: Candidate, snap: Snapshot, out: Path, sandbox: Sandbox, env: Environment,
                  cfg: SynthConfig, record: Validation) -> None:
    task = snap.task(out, instance_id=cand.id, base_commit=record.base_commit, patch=cand.patch,
                     test_patch=cand.test_patch, FAIL_TO_PASS=record.f2p, PASS_TO_PASS=record.p2p)
    golds = [grade(task, cand.patch, sandbox, env=env) for _ in range(cfg.gold_runs)]
    for g in golds:
        if g.patch_applied == Applied.FAILED:
            raise Rejected("gold_patch_does_not_apply", g.apply_log)
        if g.infra_failure:
            raise Rejected("infra_failure", f"{g.infra_failure}: {g.error}")
    empty = grade(task, "", sandbox, env=env)
    if empty.infra_failure:
        raise Rejected("infra_failure", f"{empty.infra_failure}: {empty.error}")
    flaky_f2p = sorted(t for t, o in empty.f2p.items() if o in GOOD)
    record.f2p = [t for t in record.f2p if t not in flaky_f2p]
    if not record.f2p:
        raise Rejected("flaky_f2p", f"F2P pass on a rerun of the start state: {', '.join(flaky_f2p[:5])}")
    bad_f2p = sorted({t for g in golds for t in record.f2p if g.f2p.get(t) not in GOOD})
    if bad_f2p:
        raise Rejected("gold_fails_f2p", f"with the gold patch these still fail: {', '.join(bad_f2p[:5])}")
    flaky, broken = split_p2p(record.p2p, [g.p2p for g in golds], empty.p2p)
    if broken:
        raise Rejected("gold_breaks_p2p", f"the gold patch breaks: {', '.join(broken[:5])}")
    record.flaky = sorted(set(flaky) | set(flaky_f2p))
    record.p2p = [t for t in record.p2p if t not in flaky]
    record.gold_runs = len(golds)
    record.gold_resolved = sum(_resolved_without(g, flaky) for g in golds)
    record.empty_resolved = int(empty.resolved)
    if record.empty_resolved:
        raise Rejected("empty_resolves", "the empty patch resolves the task")
    if record.gold_resolved != record.gold_runs:
        raise Rejected("gold_fails_f2p", f"gold resolved {record.gold_resolved} of {record.gold_runs} runs")


def _new_test_ids(start: Path, cand: Candidate, new_tests: list[str], env: Environment, sandbox: Sandbox,
                  cfg: SynthConfig) -> set[str]:
    """Node ids of the hidden test files that pass once the gold patch is in: on the start state they may
    not even import (a feature's new name), so their ids come from the gold state."""
    with tempfile.TemporaryDirectory(prefix="taskpilot-gold-") as tmp:
        gold = Path(tmp) / "gold"
        shutil.copytree(start, gold, symlinks=True, ignore=shutil.ignore_patterns(".leaf", "__pycache__"))
        if apply_diff(cand.patch, gold) != "ok":
            raise Rejected("gold_patch_does_not_apply")
        run = run_suite(gold, env, sandbox, tests=new_tests, timeout=cfg.suite_budget_s)
    return {t for t in run.passing() if t.split("::")[0] in new_tests}


def split_p2p(p2p: list[str], gold_runs: list[dict[str, str]], empty_run: dict[str, str]) -> tuple[list[str], list[str]]:
    """(flaky, broken) among the P2P candidates, which all passed on the first start-state run.

    Flaky: the outcome changes between reruns of the same state (the gold runs, or the two start-state
    runs). Broken: fails in every gold run (the gold patch breaks it)."""
    flaky = sorted(t for t in p2p if len({_ok(r.get(t)) for r in gold_runs}) > 1 or not _ok(empty_run.get(t)))
    broken = sorted(t for t in p2p if t not in flaky and not any(_ok(r.get(t)) for r in gold_runs))
    return flaky, broken


def _ok(outcome: str | None) -> bool:
    return outcome in GOOD or outcome == "skipped"


def _resolved_without(g: GradeResult, flaky: list[str]) -> bool:
    """Resolved once the flaky P2P tests are set aside (they leave the task's P2P)."""
    return all(o in GOOD for o in g.f2p.values()) and all(_ok(o) for t, o in g.p2p.items() if t not in flaky)


def apply_diff(diff: str, tree: Path) -> str:
    """Apply a diff TaskPilot wrote itself (bug or test patch) with plain `git apply`: 'ok' or git's message."""
    result = run_process(["git", "apply", "--whitespace=nowarn", "-"], cwd=tree, timeout=120,
                         stdin=diff if diff.endswith("\n") else diff + "\n",
                         env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tree), "GIT_CONFIG_NOSYSTEM": "1"})
    return "ok" if result.ok else result.stderr.strip()[-300:] or "git apply failed"


def _test_files(test_patch: str) -> list[str]:
    return sorted({p for paths, _ in split_files(test_patch) for p in paths if p.endswith(".py")})
