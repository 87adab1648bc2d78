"""Stage 2: TaskPilot synthesizes and calibrates fresh tasks against the iteration's policy; tasks carried
from earlier iterations are re-calibrated against it; then the training and validation sets are written.

Fresh each iteration: TaskPilot's seed is derived from the iteration (`iteration_seed`), so iteration N
draws other sites, statements and specificities than N−1, and every task accepted so far sits in the run's
pool (OUT/task-pool.jsonl), which TaskPilot reads as `exclude_tasks`: a candidate duplicating a pool task
is dropped. Carried tasks (the pool from earlier iterations) get N new rollouts of the current policy
(taskpilot.calibrate); those still in the band join this iteration's tasks with the new p̂.

Validation: with `validation.benchmark` set, a fixed benchmark built once from those other snapshots
(OUT/validation-benchmark.jsonl, not calibrated to any policy) is the validation set of every iteration;
without it, `validation.tasks` of the iteration's own tasks are held out (ordered by a hash of their id).
TaskPilot's own run folders make this stage resumable.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from leaf_cli.errors import LeafError
from leaf_cli.tasks import Task, dump_tasks, load_tasks
from leaf_train.driver.config import IterationConfig
from leaf_train.driver.policy import StartPolicy
from leaf_train.rl.config import RolloutConfig


def iteration_seed(base: int, iteration: int) -> int:
    """TaskPilot's seed in iteration N: a stable function of the configured seed and N."""
    return int(hashlib.sha256(f"{base}:{iteration}".encode()).hexdigest()[:8], 16)


def pool_path(out: Path) -> Path:
    return out / "task-pool.jsonl"


def synth_config(cfg: IterationConfig, policy_gguf: Path, out: Path, rollout: RolloutConfig,
                 iteration: int = 1, exclude: Path | None = None) -> Any:
    """The SynthConfig of this iteration: the config's options, with what they leave out filled in: the
    policy (llama.cpp on the iteration's GGUF), the target, and the rollout budget RL and validation give
    the policy (turns, tokens per turn, context window), so calibration measures p̂ under the same budget."""
    from leaf_train.taskpilot.config import SynthConfig

    data = {"policy": f"llama:{policy_gguf}", "target": cfg.train_tasks + cfg.validation.tasks,
            "agent_max_turns": rollout.max_turns, "agent_max_tokens": rollout.max_tokens,
            "agent_max_context": rollout.max_context, **cfg.synth, "out": out,
            "seed": iteration_seed(int(cfg.synth.get("seed", 0)), iteration), "exclude_tasks": exclude}
    try:
        return SynthConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise LeafError(f"synth.{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None


def run_synth(cfg: IterationConfig, policy: StartPolicy, folder: Path, rollout: RolloutConfig,
              iteration: int = 1, out: Path | None = None) -> dict[str, Any]:
    """Run (or resume) TaskPilot, re-calibrate the carried pool, write the task sets. Returns the stage output."""
    from leaf_train.taskpilot import pipeline, report

    out = out if out is not None else folder.parent
    pool = pool_path(out)
    synth = synth_config(cfg, Path(policy.gguf), folder / "taskpilot", rollout, iteration,
                         pool if pool.is_file() else None)
    if not synth.sources:
        raise LeafError("synth.sources is empty: name at least one snapshot source (e.g. pypi:toolz==1.0.0)")
    pipeline.run(synth, lambda stage, detail: print(f"taskpilot {stage}: {detail}", file=sys.stderr, flush=True))
    funnel = report.write(synth.out)
    fresh = [t.model_copy(update={"meta": {**(t.meta or {}), "iteration": iteration}}) for t in _accepted(synth.out)]
    carried, recalibrated = _recalibrate(_pool(pool, before=iteration), synth, folder / "recalibration")
    benchmark = validation_benchmark(cfg, out, rollout) if cfg.validation.benchmark else None
    tasks = fresh + carried
    need = 1 if benchmark is not None else cfg.validation.tasks + 1
    if len(tasks) < need:
        raise LeafError(f"TaskPilot accepted {len(tasks)} tasks ({len(fresh)} fresh, {len(carried)} carried), fewer "
                        f"than the {need} the iteration needs; see {synth.out / 'report.txt'}")
    validation, train = (benchmark, split(tasks, 0)[1]) if benchmark is not None else split(tasks, cfg.validation.tasks)
    train = train[:cfg.train_tasks]
    dump_tasks(train, folder / "tasks" / "train.jsonl")
    dump_tasks(validation, folder / "tasks" / "validation.jsonl")
    _add_to_pool(pool, fresh)
    return {"taskpilot": str(synth.out), "funnel": funnel["funnel"], "drop_reasons": funnel["drop_reasons"],
            "fresh": len(fresh), "carried": len(carried), "recalibrated": recalibrated,
            "train": len(train), "validation": len(validation), "policy": synth.policy,
            "validation_set": "benchmark" if benchmark is not None else "held_out", "seed": synth.seed}


def _pool(path: Path, before: int) -> list[Task]:
    """Pool tasks accepted in iterations before `before`."""
    if not path.is_file():
        return []
    return [t for t in load_tasks(path).tasks if int((t.meta or {}).get("iteration", 0)) < before]


def _add_to_pool(path: Path, tasks: list[Task]) -> None:
    """Append the iteration's fresh tasks to the pool (once: a rerun of the stage adds nothing new)."""
    known = {t.instance_id for t in load_tasks(path).tasks} if path.is_file() else set()
    dump_tasks((load_tasks(path).tasks if path.is_file() else []) + [t for t in tasks if t.instance_id not in known],
               path)


def _recalibrate(carried: list[Task], synth: Any, folder: Path) -> tuple[list[Task], int]:
    """The carried tasks still in the band under the current policy (N fresh rollouts each), with the new p̂."""
    if not carried:
        return [], 0
    from leaf_cli.tasks import make_sandbox
    from leaf_train.taskpilot.calibrate import calibrate
    from leaf_train.taskpilot.policy import Policy

    policy, sandbox, kept = Policy(synth.policy, n_ctx=synth.agent_max_context), make_sandbox(synth.sandbox), []
    for task in carried:
        cal = calibrate(task, 0, (task.meta or {}).get("specificity"), policy, sandbox, synth, folder)
        if cal.verdict == "in_band":
            kept.append(task.model_copy(update={"meta": {**(task.meta or {}), "p_hat": cal.p_hat,
                                                         "ci95": [cal.ci_low, cal.ci_high], "carried": True}}))
    return kept, len(carried)


def validation_benchmark(cfg: IterationConfig, out: Path, rollout: RolloutConfig) -> list[Task]:
    """The fixed validation set (built on first use, then read back unchanged): `validation.tasks` executable
    tasks from the `validation.benchmark` snapshots, validated by TaskPilot and calibrated by no policy
    (a scripted policy that never solves, band [0, 1]), so its meaning does not move with the policy."""
    path = out / "validation-benchmark.jsonl"
    if not path.is_file():
        from leaf_train.taskpilot import pipeline
        from leaf_train.taskpilot.config import SynthConfig

        keep = ("tests", "generator", "sandbox", "suite_budget_s", "pip_packages", "cache_dir", "max_f2p", "start_level")
        synth = SynthConfig.model_validate({
            **{k: v for k, v in cfg.synth.items() if k in keep}, "sources": cfg.validation.benchmark,
            "target": cfg.validation.tasks, "policy": "scripted:0,0,0,0,0", "rollouts": 1, "band": (0.0, 1.0),
            "rounds": 0, "max_candidates": max(4 * cfg.validation.tasks, 8), "out": out / "validation-benchmark",
            "agent_max_turns": rollout.max_turns, "agent_max_tokens": rollout.max_tokens,
            "agent_max_context": rollout.max_context})
        pipeline.run(synth, lambda stage, detail: print(f"benchmark {stage}: {detail}", file=sys.stderr, flush=True))
        found = _accepted(synth.out)
        if len(found) < cfg.validation.tasks:
            raise LeafError(f"the validation benchmark has {len(found)} of the {cfg.validation.tasks} tasks it needs "
                            f"from {', '.join(cfg.validation.benchmark)}; see {synth.out / 'report.txt'}")
        dump_tasks(sorted(found, key=lambda t: t.instance_id)[:cfg.validation.tasks], path)
    return load_tasks(path).tasks


def _accepted(out: Path) -> list[Task]:
    """TaskPilot's accepted tasks with their repositories made absolute (they are read from other folders)."""
    path = out / "tasks.jsonl"
    if not path.is_file():
        return []
    found = load_tasks(path)
    return [t.model_copy(update={"repo": t.repo_location(path.parent)}) for t in found.tasks]


def split(tasks: list[Task], held_out: int) -> tuple[list[Task], list[Task]]:
    """(validation, train): the `held_out` tasks whose id hashes lowest, and the rest, both in hash order."""
    ordered = sorted(tasks, key=lambda t: hashlib.sha256(t.instance_id.encode()).hexdigest())
    return ordered[:held_out], ordered[held_out:]


def load_split(folder: Path, name: str) -> list[Task]:
    return load_tasks(folder / "tasks" / f"{name}.jsonl").tasks
