"""The RL run, top to bottom: load the policy, then step in an environment.

`train(cfg, env, out)` is the one loop, whatever the environment: the toy repositories (`main`, i.e. `leaf
train rl`) or a task file (`--tasks FILE`, and the iteration driver's RL chunks). Each step takes one rollout
batch from the scheduler (rollout threads run ahead by at most `max_staleness` policy versions), trains on
it, hands the new weights to the rollout engine, logs and checkpoints; a run resumes from the newest
checkpoint in its folder.

Simplified on purpose: the in-process rollout engine is a second copy of the policy in the same process
(weights copied after every step, as a server would reload them); multi-GPU runs go through `accelerate
launch` with FSDP and a server engine, each rank rolling out and training on its own share of the groups.
With `executor: {kind: ray}` the rollout workers are Ray actors instead (rollout_workers.py), and the run is
one driver process, not an `accelerate launch`.
"""

from __future__ import annotations

import copy
import random
import time
from pathlib import Path
from typing import Any

import torch

from leaf_cli.errors import LeafError
from leaf_cli.executor import make_executor
from leaf_cli.tasks import Task, make_sandbox
from leaf_train.rl.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from leaf_train.rl.config import RLConfig
from leaf_train.rl.environment import Environment, TaskFileEnvironment
from leaf_train.rl.metrics import MetricsLogger
from leaf_train.rl.model import load_policy, resolve_checkpoint, rollout_state
from leaf_train.rl.rollout_workers import frozen, rollout_engine, start_rollouts
from leaf_train.rl.scheduler import RolloutScheduler
from leaf_train.rl.trainer import Trainer


def main(cfg: RLConfig, tasks: list[Task] | None = None, base_dir: Path | None = None) -> Path:
    """Run (or resume) the configured run in cfg.out_dir: on `tasks` when given (relative repositories
    resolved against `base_dir`), else on the toy tasks of `cfg.env`. Returns the run folder."""
    out = Path(cfg.out_dir)
    return train(cfg, make_environment(cfg, out, tasks, base_dir), out)


def make_environment(cfg: RLConfig, out: Path, tasks: list[Task] | None = None,
                     base_dir: Path | None = None) -> Environment:
    """The task-file environment over `tasks`, or the toy environment of `cfg.env` (its repository in out/env)."""
    sandbox = make_sandbox(cfg.env.sandbox)
    if tasks is not None:
        return TaskFileEnvironment(tasks, sandbox, cfg.seed, base_dir)
    from leaf_train.rl.toy_env import ToyEnvironment

    return ToyEnvironment(out / "env", cfg.env, cfg.seed, sandbox)


def train(cfg: RLConfig, env: Environment, out: Path) -> Path:
    """Train the policy of `cfg.model` in `env` until `cfg.steps`, resuming from out/checkpoints when
    `cfg.resume`; metrics, trajectories, checkpoints and the reward plot go under `out`. Returns `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(cfg.model_dump_json(indent=2), encoding="utf-8")
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    from accelerate import Accelerator

    accelerator = Accelerator()
    model, tokenizer = load_policy(cfg.model, resolve_checkpoint(cfg.model))
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay,
                                  betas=cfg.optim.betas)
    executor = make_executor(cfg.executor, job_name=f"leaf train rl {out.name}")
    if executor.name != "local" and accelerator.num_processes > 1:
        raise LeafError("Ray rollout workers are driven by one process: run the RL driver directly, not under "
                        "`accelerate launch`")
    rollouts = start_rollouts(cfg, executor, env, out / "trajectories",
                              lambda: _rollout_engine(cfg, model, tokenizer, accelerator))
    model, optimizer = accelerator.prepare(model, optimizer)
    trainer = Trainer(cfg, model, optimizer, pad_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
                      accelerator=accelerator)
    start = _resume(cfg, out, model, optimizer, trainer)
    if start or executor.name != "local":  # remote workers loaded the starting checkpoint, not these weights
        rollouts.update(rollout_state(accelerator.unwrap_model(model)), trainer.version)
    scheduler = _scheduler(cfg, rollouts.run_groups, start, accelerator)
    logger = MetricsLogger(out, cfg.logging, cfg.model_dump()) if accelerator.is_main_process else None
    try:
        for step in range(start, cfg.steps):
            waited = time.monotonic()
            samples = [s for group in scheduler.batch(step) for s in group]
            metrics = {"rollout_wait_seconds": time.monotonic() - waited, **trainer.step(samples),
                       "turns_mean": sum(s.extra.get("turns", 0.0) for s in samples) / len(samples)}
            rollouts.update(rollout_state(accelerator.unwrap_model(model)), trainer.version)
            scheduler.set_version(trainer.version)
            if logger is not None:
                logger.log(step, metrics)
            if cfg.checkpoint_every and (step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.steps:
                save_checkpoint(out / "checkpoints", step + 1, model, optimizer,
                                {"version": trainer.version, "next_group": (step + 1) * cfg.rollout.groups_per_step,
                                 "seed": cfg.seed}, accelerator)
    finally:
        scheduler.stop()
        rollouts.close()
        if logger is not None:
            logger.close()
    if cfg.logging.plot and accelerator.is_main_process and (out / "metrics.jsonl").is_file():
        from leaf_train.rl.plot import plot_reward

        plot_reward(out / "metrics.jsonl", out / "reward.png")
    return out


def _rollout_engine(cfg: RLConfig, model: Any, tokenizer: Any, accelerator: Any) -> Any:
    """The in-process rollout engine: a server's client, or the transformers engine over a frozen copy."""
    if cfg.rollout.engine == "server":
        return rollout_engine(cfg, model, tokenizer, accelerator)
    return rollout_engine(cfg, frozen(copy.deepcopy(model)), tokenizer)


def _scheduler(cfg: RLConfig, run_groups: list[Any], start: int, accelerator: Any) -> RolloutScheduler:
    per_rank = cfg.rollout.groups_per_step
    if accelerator.num_processes > 1:
        # Each rank rolls out every num_processes-th group of the global order and trains on its own share.
        rank, world = accelerator.process_index, accelerator.num_processes
        run_groups = [lambda g, inner=inner: inner(g * world + rank) for inner in run_groups]
    return RolloutScheduler(run_groups, groups_per_step=per_rank, max_staleness=cfg.rollout.max_staleness,
                            workers=len(run_groups), first_group=start * per_rank, version=start,
                            end_group=cfg.steps * per_rank).start()


def _resume(cfg: RLConfig, out: Path, model: Any, optimizer: Any, trainer: Trainer) -> int:
    """The step to start from: 0, or the newest checkpoint's step with its state restored."""
    found = latest_checkpoint(out / "checkpoints") if cfg.resume else None
    if found is None:
        return 0
    state = load_checkpoint(found, model, optimizer)
    trainer.version = int(state["version"])
    print(f"resumed from {found} (step {state['step']})", flush=True)
    return int(state["step"])
