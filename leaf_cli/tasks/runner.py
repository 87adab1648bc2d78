"""The eval runner: attempts (agent + grading) or plain grading over many tasks, K workers in parallel.

Workers are threads: an attempt spends its time in subprocesses (git, pytest, the agent's Bash) and in
the engine (llama.cpp and HTTP release the GIL), the environment cache and its locks are shared in one
process, and engine factories (closures over a model spec) need no pickling. Results are written by the
calling thread only, as each attempt finishes.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from dataclasses import dataclass
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Callable, Mapping


from leaf_cli.agent import Limits
from leaf_cli.errors import LeafError
from leaf_cli.llm.engine import Engine, Sampling
from leaf_cli.tasks.attempt import make_attempt_workspace, run_attempt
from leaf_cli.tasks.env import EnvBuildError, get_env
from leaf_cli.tasks.grading import GradeResult, grade
from leaf_cli.tasks.results import AttemptResult, Prediction, RunDir
from leaf_cli.tasks.sandbox import Sandbox
from leaf_cli.tasks.task import Task

OnResult = Callable[[AttemptResult], None]


@dataclass
class EvalConfig:
    """Everything an eval run needs besides the tasks."""

    out: Path
    sandbox: Sandbox
    model_name: str
    base_dir: Path | None = None
    attempts: int = 1
    workers: int = 1
    resume: bool = False
    limits: Limits | None = None
    sampling: Sampling | None = None
    run_id: str = ""


def run_eval(tasks: list[Task], engine_factory: Callable[[], Engine], config: EvalConfig,
             on_result: OnResult | None = None) -> dict:
    """Run `config.attempts` agent attempts per task and grade each; returns summary.json's content."""
    run_id = config.run_id or uuid.uuid4().hex[:8]
    jobs = [(task, a) for task in tasks for a in range(config.attempts)]

    def work(task: Task, attempt: int) -> tuple[AttemptResult, Prediction | None]:
        began = time.monotonic()
        try:
            return _attempt(task, attempt, engine_factory, config, run_id)
        except (LeafError, OSError) as exc:  # a broken source or workspace: labelled, never dropped
            verdict = GradeResult(instance_id=task.instance_id, resolved=False, patch_applied="empty",
                                  infra_failure="harness", error=f"{type(exc).__name__}: {exc}")
            return _result(task, attempt, config, verdict, began), None

    return _run_jobs(jobs, work, config, on_result)


def run_grading(tasks: list[Task], patches: Mapping[str, list[str]], config: EvalConfig,
                on_result: OnResult | None = None) -> dict:
    """Grade given patches (predictions, gold or empty) without an agent: `patches[instance_id][attempt]`.
    A task without a patch is graded with the empty patch (attempt 0)."""
    jobs = [(task, a) for task in tasks for a in range(max(1, len(patches.get(task.instance_id, []))))]

    def work(task: Task, attempt: int) -> tuple[AttemptResult, Prediction | None]:
        began = time.monotonic()
        mine = patches.get(task.instance_id, [])
        verdict = _safe_grade(task, mine[attempt] if attempt < len(mine) else "", config)
        result = _result(task, attempt, config, verdict, began)
        return result.model_copy(update={"grade_s": result.wall_s}), None

    return _run_jobs(jobs, work, config, on_result)


def pending_jobs(tasks: list[Task], attempts: int, out: Path) -> int:
    """How many attempts a resumed run would still do."""
    done = RunDir(out).load_results()
    return sum((t.instance_id, a) not in done for t in tasks for a in range(attempts))


def _run_jobs(jobs: list[tuple[Task, int]], work: Callable[[Task, int], tuple[AttemptResult, Prediction | None]],
              config: EvalConfig, on_result: OnResult | None) -> dict:
    run_dir = RunDir(config.out)
    if run_dir.has_results() and not config.resume:
        raise LeafError(f"{config.out} already holds results; pass --resume to continue it or choose another --out")
    done = run_dir.compact() if config.resume else {}
    todo = [(t, a) for t, a in jobs if (t.instance_id, a) not in done]
    with ThreadPoolExecutor(max_workers=max(1, config.workers), thread_name_prefix="leaf-eval") as pool:
        futures: list[Future] = [pool.submit(work, t, a) for t, a in todo]
        try:
            for future in as_completed(futures):
                result, prediction = future.result()
                run_dir.append(result, prediction)
                if on_result is not None:
                    on_result(result)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return run_dir.write_summary({"model": config.model_name, "sandbox": config.sandbox.name})


def _attempt(task: Task, attempt: int, engine_factory: Callable[[], Engine], config: EvalConfig,
             run_id: str) -> tuple[AttemptResult, Prediction | None]:
    began = time.monotonic()
    try:
        env = get_env(task, config.base_dir)
    except EnvBuildError as exc:
        verdict = GradeResult(instance_id=task.instance_id, resolved=False, patch_applied="empty",
                              infra_failure="env_build", error=str(exc))
        return _result(task, attempt, config, verdict, began), None
    sandbox = config.sandbox.for_task(task)
    traj_path = config.out / "trajectories" / f"{_safe(task.instance_id)}__{attempt}.jsonl"
    with tempfile.TemporaryDirectory(prefix="leaf-attempt-") as tmp:
        ws = make_attempt_workspace(task, Path(tmp), config.base_dir)
        outcome = run_attempt(task, engine_factory(), ws, env, sandbox, limits=config.limits,
                              sampling=config.sampling, trajectory_path=traj_path, run_id=f"{run_id}-{attempt}")
    agent_s = time.monotonic() - began
    verdict = _safe_grade(task, outcome.patch, config, env=env)
    traj = outcome.trajectory
    usage = traj.usage()
    result = _result(task, attempt, config, verdict, began).model_copy(update={
        "protected_touched": outcome.protected_touched, "exit_reason": traj.exit_reason,
        "steps": traj.assistant_turns(), "agent_s": round(agent_s, 3),
        "grade_s": round(time.monotonic() - began - agent_s, 3), "traj_path": str(traj_path),
        "tokens": {k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")},
    })
    prediction = Prediction(instance_id=task.instance_id, model_name_or_path=config.model_name,
                            model_patch=outcome.patch, run_id=run_id, attempt=attempt)
    return result, prediction


def _safe_grade(task: Task, patch: str, config: EvalConfig, env=None) -> GradeResult:  # noqa: ANN001
    """Grade; an unexpected harness error becomes a labelled infra failure instead of killing the run."""
    try:
        return grade(task, patch, config.sandbox, base_dir=config.base_dir, env=env)
    except (LeafError, OSError) as exc:
        return GradeResult(instance_id=task.instance_id, resolved=False, patch_applied="empty",
                           infra_failure="harness", error=f"{type(exc).__name__}: {exc}")


def _result(task: Task, attempt: int, config: EvalConfig, verdict: GradeResult, began: float) -> AttemptResult:
    data = verdict.model_dump(include={"resolved", "patch_applied", "restored", "f2p", "p2p", "exit_code",
                                       "infra_failure", "error", "sandbox"}, mode="json")
    return AttemptResult(instance_id=task.instance_id, attempt=attempt, repo=task.repo, model=config.model_name,
                         wall_s=round(time.monotonic() - began, 3), **data)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
