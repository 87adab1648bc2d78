"""The eval runner: attempts (agent + grading) or plain grading over many tasks, K workers in parallel.

Image tasks (SWE-bench, Pro, Harbor, PatchEval imports) need the docker sandbox and a Docker daemon: a run
that has them checks both before any attempt starts and stops with one line naming what is missing, never
recording such tasks as unresolved. Their agent works in a container of the image (`envs.image.ImageSession`);
a Harbor task is graded in that same container before it goes, the others from the patch afterwards.

Attempts run on an executor (`leaf_cli.executor`): threads in this process by default (an attempt spends
its time in subprocesses and in engines that release the GIL), or Ray tasks (`--ray`), which run this same
attempt function on the cluster's nodes and ship its trajectory and log back. Results are written by the
calling thread only, as each attempt finishes; a worker lost mid-attempt is re-run by the executor.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping


from leaf_cli.agent import Limits
from leaf_cli.errors import InfraError, LeafError
from leaf_cli.llm.engine import Engine, Sampling
from leaf_cli.tasks.runner.attempt import make_attempt_workspace, run_attempt
from leaf_cli.tasks.envs.venv import EnvBuildError, get_env
from leaf_cli.tasks.grading.choose import grade, grader_of
from leaf_cli.tasks.grading.verdict import GradeResult
from leaf_cli.tasks.envs.image import ImageSession, check_image_tasks, is_image_task
from leaf_cli.tasks.runner.results import AttemptResult, Prediction, RunDir
from leaf_cli.tasks.envs.sandbox import Sandbox
from leaf_cli.tasks.format.task import Task

if TYPE_CHECKING:
    from leaf_cli.executor import Executor

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
    harness: str = "leaf"
    """The tool profile (`leaf_cli.agent.harness`): leaf, or r2e for the harness ablation."""
    p2p_skip_ok: bool = False
    """Count a skipped PASS_TO_PASS test as kept (SWE-bench v5's rule); by default it fails the attempt."""
    preset: str | None = None
    """The preset the settings came from (recorded in summary.json)."""
    executor: "Executor | None" = None
    """Where attempts run: None = `workers` threads in this process; a Ray executor spreads them."""


def run_eval(tasks: list[Task], engine_factory: Callable[[], Engine], config: EvalConfig,
             on_result: OnResult | None = None) -> dict:
    """Run `config.attempts` agent attempts per task and grade each; returns summary.json's content."""
    check_image_tasks(tasks, config.sandbox.name)
    run_id = config.run_id or uuid.uuid4().hex[:8]
    jobs = [(task, a) for task in tasks for a in range(config.attempts)]
    plain = replace(config, executor=None)  # what travels with a job to its worker

    def work(task: Task, attempt: int, out: Path) -> tuple[AttemptResult, Prediction | None]:
        began = time.monotonic()
        try:
            return _attempt(task, attempt, engine_factory, replace(plain, out=out), run_id)
        except (LeafError, OSError) as exc:  # a broken source or workspace: labelled, never dropped
            return _result(task, attempt, config, _infra(task, exc), began), None

    return _run_jobs(jobs, work, config, on_result)


def run_grading(tasks: list[Task], patches: Mapping[str, list[str]], config: EvalConfig,
                on_result: OnResult | None = None) -> dict:
    """Grade given patches (predictions, gold or empty) without an agent: `patches[instance_id][attempt]`.
    A task without a patch is graded with the empty patch (attempt 0)."""
    check_image_tasks(tasks, config.sandbox.name)
    jobs = [(task, a) for task in tasks for a in range(max(1, len(patches.get(task.instance_id, []))))]
    plain = replace(config, executor=None)

    def work(task: Task, attempt: int, out: Path) -> tuple[AttemptResult, Prediction | None]:
        began = time.monotonic()
        mine = patches.get(task.instance_id, [])
        verdict = _safe_grade(task, mine[attempt] if attempt < len(mine) else "", replace(plain, out=out),
                              attempt=attempt)
        result = _result(task, attempt, config, verdict, began)
        return result.model_copy(update={"grade_s": result.wall_s}), None

    return _run_jobs(jobs, work, config, on_result)


def pending_jobs(tasks: list[Task], attempts: int, out: Path) -> int:
    """How many attempts a resumed run would still do."""
    done = RunDir(out).load_results()
    return sum((t.instance_id, a) not in done for t in tasks for a in range(attempts))


def _run_jobs(jobs: list[tuple[Task, int]], work: Callable[[Task, int, Path], tuple[AttemptResult, Prediction | None]],
              config: EvalConfig, on_result: OnResult | None) -> dict:
    from leaf_cli.executor import Job, LocalExecutor
    from leaf_cli.tasks.runner.placement import needs_of

    run_dir = RunDir(config.out)
    if run_dir.has_results() and not config.resume:
        raise LeafError(f"{config.out} already holds results; pass --resume to continue it or choose another --out")
    done = run_dir.compact() if config.resume else {}
    executor = config.executor or LocalExecutor()
    todo = [Job(name=f"attempt {t.instance_id} #{a}", fn=work, args=(t, a), outputs=config.out, rebase=_rebase,
                needs=needs_of(t, config.sandbox.name, executor.cfg))
            for t, a in jobs if (t.instance_id, a) not in done]
    with closing(executor.run(todo, config.workers)) as finished:
        for item in finished:
            task, attempt = item.job.args
            if item.lost is not None:  # the retry budget ran out: labelled, never silently unresolved
                result, prediction = _lost(task, attempt, config, item.lost), None
            else:
                result, prediction = item.value
            result = result.model_copy(update={"infra_retries": item.infra_retries})
            run_dir.append(result, prediction)
            if on_result is not None:
                on_result(result)
    retries = sum(r.infra_retries for r in run_dir.load_results().values())
    return run_dir.write_summary({"model": config.model_name, "sandbox": config.sandbox.name,
                                  "harness": config.harness, "preset": config.preset, "p2p_skip_ok": config.p2p_skip_ok,
                                  "executor": executor.name, "infra_retries": retries})


def _rebase(value: tuple[AttemptResult, Prediction | None], scratch: Path, out: Path) -> tuple[AttemptResult, Prediction | None]:
    """A remote attempt's paths, from its node's scratch folder to the driver's output folder."""
    from leaf_cli.executor.artifacts import rebased

    result, prediction = value
    moved = {k: rebased(getattr(result, k), scratch, out) for k in ("traj_path", "log_path")}
    return result.model_copy(update=moved), prediction


def _lost(task: Task, attempt: int, config: EvalConfig, why: str) -> AttemptResult:
    verdict = GradeResult.infrastructure(task.instance_id, grader_of(task), "worker_lost", why)
    return _result(task, attempt, config, verdict, time.monotonic())


def _attempt(task: Task, attempt: int, engine_factory: Callable[[], Engine], config: EvalConfig,
             run_id: str) -> tuple[AttemptResult, Prediction | None]:
    began = time.monotonic()
    env = None
    if not is_image_task(task):
        try:
            env = get_env(task, config.base_dir, config.sandbox.for_task(task))  # built where the attempt runs
        except EnvBuildError as exc:
            verdict = GradeResult.infrastructure(task.instance_id, grader_of(task), "env_build", str(exc))
            return _result(task, attempt, config, verdict, began), None
    traj_path = config.out / "trajectories" / f"{_safe(task.instance_id)}__{attempt}.jsonl"
    verdict = None
    with tempfile.TemporaryDirectory(prefix="leaf-attempt-") as tmp:
        ws = make_attempt_workspace(task, Path(tmp), config.base_dir)
        kwargs = dict(limits=config.limits, sampling=config.sampling, trajectory_path=traj_path,
                      run_id=f"{run_id}-{attempt}", harness=config.harness)
        if is_image_task(task):
            with ImageSession(task, ws.root) as session:
                outcome = run_attempt(task, _engine(engine_factory, attempt), ws, None, session, **kwargs)
                agent_s = time.monotonic() - began
                if grader_of(task) == "reward":  # Harbor grades the agent's own container, before it goes
                    verdict = _safe_grade(task, outcome.patch, config, attempt=attempt, workspace=ws.root,
                                          session=session)
        else:
            outcome = run_attempt(task, _engine(engine_factory, attempt), ws, env, config.sandbox.for_task(task), **kwargs)
            agent_s = time.monotonic() - began
    if verdict is None:
        verdict = _safe_grade(task, outcome.patch, config, env=env, attempt=attempt)
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


def _engine(engine_factory: Callable[[], Engine], attempt: int) -> Engine:
    """A fresh engine for attempt `attempt`; a factory with `for_attempt` makes one that depends on the
    attempt number only (TaskPilot's scripted oracle: the same draws on any executor, in any order)."""
    for_attempt = getattr(engine_factory, "for_attempt", None)
    return for_attempt(attempt) if for_attempt is not None else engine_factory()


def _safe_grade(task: Task, patch: str, config: EvalConfig, env=None, *, attempt: int = 0,  # noqa: ANN001
                workspace: Path | None = None, session: ImageSession | None = None) -> GradeResult:
    """Grade with the task's grader; an unexpected harness error becomes a labelled infra failure instead of
    killing the run."""
    log_path = config.out / "logs" / f"{_safe(task.instance_id)}__{attempt}.log"
    try:
        return grade(task, patch, config.sandbox, base_dir=config.base_dir, env=env, workspace=workspace,
                     session=session, p2p_skip_ok=config.p2p_skip_ok, log_path=log_path)
    except (LeafError, OSError) as exc:
        return _infra(task, exc)


def _infra(task: Task, exc: LeafError | OSError) -> GradeResult:
    """An error under a valid attempt: an InfraError keeps its own label; anything else is the harness's."""
    kind = exc.kind if isinstance(exc, InfraError) else "harness"
    return GradeResult.infrastructure(task.instance_id, grader_of(task), kind, f"{type(exc).__name__}: {exc}")


def _result(task: Task, attempt: int, config: EvalConfig, verdict: GradeResult, began: float) -> AttemptResult:
    data = verdict.model_dump(include={"resolved", "patch_applied", "restored", "f2p", "p2p", "exit_code",
                                       "infra_failure", "error", "sandbox", "grader", "reward", "rewards", "log_path"}, mode="json")
    return AttemptResult(instance_id=task.instance_id, attempt=attempt, repo=task.repo or task.instance_id,
                         model=config.model_name, harness=config.harness, wall_s=round(time.monotonic() - began, 3), **data)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
