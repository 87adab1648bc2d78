"""The llm generator: a model behind an OpenAI-compatible endpoint explores the snapshot with the Leaf
tools (the same `run_episode` harness, Bash in the sandbox without network) and writes a task: the gold
change to the library, a new test file, and `.taskpilot/STATEMENT.md`.

The episode's diff is split: test paths (the eval machinery's protected globs) become the hidden
`test_patch`, the rest the gold `patch`; the start state is the clean snapshot. Whatever the model
produced is recorded; validation decides (no_statement, empty_gold_patch, no_hidden_tests, ...).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable, Iterator

from leaf_cli.agent import EpisodeHooks, Limits, run_episode
from leaf_cli.llm.engine import Engine, Sampling
from leaf_cli.tasks import (DEFAULT_PROTECTED_PATHS, Environment, Sandbox, agent_workspace, make_attempt_workspace,
                            matcher, split_files, workspace_diff)
from leaf_train.taskpilot import prompts
from leaf_train.taskpilot.candidate import Candidate, digest
from leaf_train.taskpilot.procedural import is_test_file
from leaf_train.taskpilot.snapshot import Snapshot

STATEMENT_FILE = ".taskpilot/STATEMENT.md"
KINDS = ("bug-fix", "feature")


def generate(snap: Snapshot, out: Path, env: Environment, sandbox: Sandbox, engine_factory: Callable[[], Engine],
             *, max_turns: int, attempts: int, log_dir: Path) -> Iterator[Candidate]:
    """Up to `attempts` generation episodes on `snap`, alternating bug-fix and feature tasks."""
    for index in range(attempts):
        yield episode(snap, out, env, sandbox, engine_factory(), KINDS[index % 2], index, max_turns, log_dir)


def episode(snap: Snapshot, out: Path, env: Environment, sandbox: Sandbox, engine: Engine, kind: str, index: int,
            max_turns: int, log_dir: Path) -> Candidate:
    """One generation episode; the candidate carries whatever the model wrote (maybe nothing)."""
    test_dirs = sorted({t.split("::")[0].rsplit("/", 1)[0] for t in snap.passing if "/" in t.split("::")[0]})
    prompt = prompts.render("generate_task", package=snap.package, version=snap.version, n_passing=len(snap.passing),
                            test_hint=" ".join(snap.tests), kind=kind, test_dir=test_dirs[0] if test_dirs else "tests")
    with tempfile.TemporaryDirectory(prefix="taskpilot-gen-") as tmp:
        ws = make_attempt_workspace(snap.task(out), Path(tmp))
        traj = run_episode(prompt, engine, agent_workspace(ws, env, sandbox),
                           sampling=Sampling(temperature=0.6, max_tokens=2048),
                           limits=Limits(max_turns=max_turns, max_seconds=1800),
                           run_id=f"gen-{snap.id}-{index}",
                           hooks=EpisodeHooks(trajectory_path=log_dir / f"{snap.id}-{index}.jsonl"))
        statement_path = ws.root / STATEMENT_FILE
        text = statement_path.read_text(encoding="utf-8", errors="replace").strip() if statement_path.is_file() else ""
        diff = workspace_diff(ws)
    patch, test_patch = split_diff(diff)
    return Candidate(id=digest(snap.id, "llm", patch, test_patch, text, index), snapshot=snap.id, generator="llm",
                     patch=patch, test_patch=test_patch, problem_statement=text, bug_type=f"llm_{kind}",
                     meta={"kind": kind, "prompt_version": prompts.version("generate_task"), "model": engine.name,
                           "exit_reason": traj.exit_reason, "turns": traj.assistant_turns()})


def split_diff(diff: str) -> tuple[str, str]:
    """(gold patch: library files, test patch: test files); the statement folder is in neither."""
    protected = matcher(list(DEFAULT_PROTECTED_PATHS))
    gold, tests = [], []
    for paths, text in split_files(diff):
        if any(p.startswith(".taskpilot/") for p in paths):
            continue
        (tests if any(protected(p) or is_test_file(p) for p in paths) else gold).append(text)
    return "".join(gold), "".join(tests)
