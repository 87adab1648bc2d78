"""The RL run, top to bottom: load the policy, then step in an environment.

`train(cfg, env, out)` is the one loop, whatever the environment: the toy repositories (`main`, i.e. `leaf
train rl`) or a task file (`--tasks FILE`, and the iteration driver's RL chunks). Each step takes one rollout
batch from the scheduler (rollout threads run ahead by at most `max_staleness` policy versions), trains on
it, hands the new weights to the rollout engine, logs and checkpoints; a run resumes from the newest
checkpoint in its folder.

Simplified on purpose: the in-process rollout engine is a second copy of the policy in the same process
(weights copied after every step, as a server would reload them); multi-GPU runs go through `accelerate
launch` with FSDP and a server engine, each rank rolling out and training on its own share of the groups.
"""

from __future__ import annotations

import copy
import random
import time
from pathlib import Path
from typing import Any

import torch

from leaf_cli.tasks import Task, make_sandbox
from leaf_train.rl.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from leaf_train.rl.config import RLConfig
from leaf_train.rl.environment import Environment, TaskFileEnvironment
from leaf_train.rl.metrics import MetricsLogger
from leaf_train.rl.model import load_policy, resolve_checkpoint, rollout_state
from leaf_train.rl.rollout import GroupRunner
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
    engine = _rollout_engine(cfg, model, tokenizer, accelerator)
    model, optimizer = accelerator.prepare(model, optimizer)
    trainer = Trainer(cfg, model, optimizer, pad_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
                      accelerator=accelerator)
    start = _resume(cfg, out, model, optimizer, trainer)
    if start:
        engine.load_weights(rollout_state(accelerator.unwrap_model(model)), trainer.version)
    runner = GroupRunner(engine, cfg.rollout, env, out / "trajectories")
    scheduler = _scheduler(cfg, runner.run_group, start, accelerator)
    logger = MetricsLogger(out, cfg.logging, cfg.model_dump()) if accelerator.is_main_process else None
    try:
        for step in range(start, cfg.steps):
            waited = time.monotonic()
            samples = [s for group in scheduler.batch(step) for s in group]
            metrics = {"rollout_wait_seconds": time.monotonic() - waited, **trainer.step(samples),
                       "turns_mean": sum(s.extra.get("turns", 0.0) for s in samples) / len(samples)}
            engine.load_weights(rollout_state(accelerator.unwrap_model(model)), trainer.version)
            scheduler.set_version(trainer.version)
            if logger is not None:
                logger.log(step, metrics)
            if cfg.checkpoint_every and (step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.steps:
                save_checkpoint(out / "checkpoints", step + 1, model, optimizer,
                                {"version": trainer.version, "next_group": (step + 1) * cfg.rollout.groups_per_step,
                                 "seed": cfg.seed}, accelerator)
    finally:
        scheduler.stop()
        if logger is not None:
            logger.close()
    if cfg.logging.plot and accelerator.is_main_process and (out / "metrics.jsonl").is_file():
        from leaf_train.rl.plot import plot_reward

        plot_reward(out / "metrics.jsonl", out / "reward.png")
    return out


def _rollout_engine(cfg: RLConfig, model: Any, tokenizer: Any, accelerator: Any) -> Any:
    from leaf_cli.llm.transformers_engine import TransformersEngine, template_renderer, tokenizer_renderer

    render = tokenizer_renderer(tokenizer) if cfg.rollout.template == "tokenizer" else template_renderer(tokenizer)
    if cfg.rollout.engine == "server":
        from leaf_train.rl.server_engine import ServerEngine

        engine = ServerEngine(cfg.rollout.server, tokenizer, render=render, context_limit=cfg.rollout.max_context,
                              accelerator=accelerator)
        engine.attach(model)
        return engine
    rollout_model = copy.deepcopy(model).eval()
    for p in rollout_model.parameters():
        p.requires_grad_(False)
    return TransformersEngine(rollout_model, tokenizer, name="policy", context_limit=cfg.rollout.max_context,
                              render=render, max_batch=cfg.rollout.batch)


def _scheduler(cfg: RLConfig, run_group: Any, start: int, accelerator: Any) -> RolloutScheduler:
    per_rank = cfg.rollout.groups_per_step
    if accelerator.num_processes > 1:
        # Each rank rolls out every num_processes-th group of the global order and trains on its own share.
        rank, world = accelerator.process_index, accelerator.num_processes
        inner = run_group
        run_group = lambda g: inner(g * world + rank)  # noqa: E731
    return RolloutScheduler(run_group, groups_per_step=per_rank, max_staleness=cfg.rollout.max_staleness,
                            workers=cfg.rollout.workers, first_group=start * per_rank, version=start).start()


def _resume(cfg: RLConfig, out: Path, model: Any, optimizer: Any, trainer: Trainer) -> int:
    """The step to start from: 0, or the newest checkpoint's step with its state restored."""
    found = latest_checkpoint(out / "checkpoints") if cfg.resume else None
    if found is None:
        return 0
    state = load_checkpoint(found, model, optimizer)
    trainer.version = int(state["version"])
    print(f"resumed from {found} (step {state['step']})", flush=True)
    return int(state["step"])
