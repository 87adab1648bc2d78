"""Tasks: the task format, cached environments, sandboxes, grading and the eval runner (`leaf eval`).

Public API (TaskPilot and RL build on it):
- `Task`, `load_tasks(path) -> TaskFile`, `dump_tasks(tasks, path)`: the JSONL task format.
- `get_env(task, base_dir) -> Environment`: the cached venv of a (repository, version, install_config).
- `snapshot(task, base_dir) -> Path`: the cached start-state tree (read-only by convention).
- `make_attempt_workspace(task, dest, base_dir) -> AttemptWorkspace`: a fresh single-commit repository.
- `run_attempt(task, engine, ws, env, sandbox, ...) -> AttemptOutcome`: one Leaf episode and its patch.
- `grade(task, patch, sandbox, base_dir=..., env=...) -> GradeResult`: the verdict on a patch.
- `make_sandbox(name) -> Sandbox`: "subprocess", "bwrap" (default where installed) or "docker".
- `run_eval(tasks, engine_factory, EvalConfig) / run_grading(tasks, patches, EvalConfig) -> summary`.
- `stats`: pass_at_k, pass_pow_k, clustered_standard_error, summarize, paired_difference.
- Building blocks TaskPilot and RL share: `agent_workspace`, `workspace_diff`, `matcher` (gitwildmatch),
  `split_files` / `without_paths` (diffs), `run_process`, `git` / `GIT_IDENTITY` / `single_commit_repo`,
  `PASSING_OUTCOMES` (pytest outcomes that count as passing), `read_rows` (JSONL / JSON / parquet rows),
  `locked` (an inter-process file lock, as the caches use).
Modules are imported on first use, so `import leaf_cli.tasks` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DEFAULT_PROTECTED_PATHS": "format.task", "InstallConfig": "format.task", "Task": "format.task",
    "TaskFile": "format.task", "TaskLineError": "format.task", "Timeouts": "format.task",
    "dump_tasks": "format.task", "load_tasks": "format.task",
    "Environment": "envs.venv", "EnvBuildError": "envs.venv", "get_env": "envs.venv", "snapshot": "envs.source",
    "AttemptOutcome": "runner.attempt", "AttemptWorkspace": "runner.attempt", "extract_patch": "runner.attempt",
    "make_attempt_workspace": "runner.attempt", "run_attempt": "runner.attempt",
    "GradeResult": "grading.verdict", "grade": "grading.choose", "Applied": "grading.patches",
    "Sandbox": "envs.sandbox", "make_sandbox": "envs.backends",
    "EvalConfig": "runner.eval", "run_eval": "runner.eval", "run_grading": "runner.eval",
    "AttemptResult": "runner.results", "Prediction": "runner.results", "RunDir": "runner.results",
    "export_harbor": "exporters.harbor",
    # the pieces TaskPilot and RL build their own steps from (training/ imports only this namespace)
    "agent_workspace": "runner.attempt", "workspace_diff": "runner.attempt", "matcher": "format.globs",
    "split_files": "grading.patches", "without_paths": "grading.patches", "run_process": "envs.proc",
    "GIT_IDENTITY": "envs.source", "git": "envs.source", "single_commit_repo": "envs.source",
    "PASSING_OUTCOMES": "grading.testrun:GOOD", "read_rows": "importers.rows", "locked": "envs.cache",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'leaf_cli.tasks' has no attribute {name!r}")
    module, _, attribute = where.partition(":")  # "module:attribute" where the public name differs
    return getattr(importlib.import_module(f"leaf_cli.tasks.{module}"), attribute or name)
