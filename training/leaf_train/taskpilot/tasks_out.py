"""The accepted task as a task-file record (notes/eval.md §6): SWE-bench columns plus leaf's fields."""

from __future__ import annotations

import re

from leaf_cli.tasks import InstallConfig, Task
from leaf_train.taskpilot.candidate import Calibration, Candidate, Validation
from leaf_train.taskpilot.snapshot import Snapshot


def instance_id(cand: Candidate, snap: Snapshot) -> str:
    """`<pkg>__<pkg>-<version>.<bug_type>__<hash8>` (the synthetic-id convention)."""
    pkg = re.sub(r"[^A-Za-z0-9_.-]+", "-", snap.package.lower())
    return f"{pkg}__{pkg}-{snap.version}.{cand.bug_type or cand.generator}__{cand.id[:8]}"


def hidden_tests(cand: Candidate, val: Validation) -> list[str]:
    """The files the solver must not see: those holding the F2P tests (existing tests for procedural and
    combined bugs) and the generator's new test files (llm). The eval attempt removes them from the solver's
    copy, so neither the tests nor their results localize the bug; grading restores them from the pristine
    start state before running the F2P and P2P tests (`Task.hidden_paths`)."""
    from leaf_cli.tasks import split_files

    files = {t.split("::")[0] for t in val.f2p}
    files |= {p for paths, _ in split_files(cand.test_patch) for p in paths if p != "/dev/null"}
    return sorted(files)


def final_task(cand: Candidate, val: Validation, snap: Snapshot, cal: Calibration, policy: str) -> Task:
    """The record `leaf eval` and the RL trainer read. `repo` is relative to the task file's folder."""
    return Task(
        instance_id=instance_id(cand, snap), repo=snap.repo, base_commit=val.base_commit,
        problem_statement=cand.problem_statement, patch=cand.patch, test_patch=cand.test_patch,
        FAIL_TO_PASS=val.f2p, PASS_TO_PASS=val.p2p, version=snap.version, environment_setup_commit=snap.commit,
        source={**snap.source, "kind": "taskpilot", "snapshot": snap.id, "generator": cand.generator},
        bug_patch=cand.bug_patch or None, install_config=InstallConfig(**snap.install_config),
        validation={"gold_runs": val.gold_runs, "gold_resolved": val.gold_resolved,
                    "empty_resolved": val.empty_resolved, "flaky_tests_removed": val.flaky},
        stats={"f2p": len(val.f2p), "p2p": len(val.p2p)},
        hidden_paths=hidden_tests(cand, val),
        bug_type=cand.bug_type, test_files=sorted({t.split("::")[0] for t in val.f2p + val.p2p}),
        meta={"candidate": cand.id, "round": cand.round, "specificity": cand.specificity, "policy": policy,
              "p_hat": cal.p_hat, "ci95": [cal.ci_low, cal.ci_high], "rollouts": cal.rollouts,
              **{k: v for k, v in cand.meta.items() if k in ("operator", "components", "kind", "prompt_version", "model")}},
    )
