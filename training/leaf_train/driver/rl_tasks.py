"""DPPO on a task file: the RL stage's run loop (leaf_train.rl.run) with TaskPilot's tasks as the
environment instead of the toy repositories.

The loop is the RL run's, piece for piece (policy loading, rollout engine, scheduler, trainer,
checkpoint/resume, metrics); only the group runner differs: group g runs the task at position g of a
seeded order of the task list, with all five tools, graded by leaf's grader in a fresh tree. It runs to
`cfg.steps` and resumes from the newest checkpoint, which is how the driver runs RL in validation chunks.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any, Callable

from leaf_cli.tasks import Task, make_sandbox
from leaf_train.rl.config import RLConfig


def run_rl(cfg: RLConfig, tasks: list[Task], model_path: Path) -> Path:
    """Train `model_path` on `tasks` until `cfg.steps` (resuming from cfg.out_dir's checkpoints)."""
    import torch
    from accelerate import Accelerator

    from leaf_train.rl import run as rl_run
    from leaf_train.rl.checkpoint import save_checkpoint
    from leaf_train.rl.metrics import MetricsLogger
    from leaf_train.rl.model import load_policy, rollout_state
    from leaf_train.rl.trainer import Trainer

    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(cfg.model_dump_json(indent=2), encoding="utf-8")
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    accelerator = Accelerator()
    model, tokenizer = load_policy(cfg.model, model_path)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay, betas=cfg.optim.betas)
    engine = rl_run._rollout_engine(cfg, model, tokenizer, accelerator)
    model, optimizer = accelerator.prepare(model, optimizer)
    trainer = Trainer(cfg, model, optimizer, pad_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
                      accelerator=accelerator)
    start = rl_run._resume(cfg, out, model, optimizer, trainer)
    if start:
        engine.load_weights(rollout_state(accelerator.unwrap_model(model)), trainer.version)
    scheduler = rl_run._scheduler(cfg, task_groups(cfg, out, engine, tasks), start, accelerator)
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
    return out


def task_groups(cfg: RLConfig, out: Path, engine: Any, tasks: list[Task]) -> Callable[[int], list]:
    """run_group(g): the graded episodes of group g, on the task at position g of a seeded order."""
    from leaf_train.rl.rollout import GroupRunner

    if not tasks:
        raise ValueError("no tasks to train on")
    runner = GroupRunner(engine, cfg.rollout, make_sandbox(cfg.env.sandbox), out / "trajectories")
    order = random.Random(cfg.seed).sample(range(len(tasks)), len(tasks))

    def run_group(group: int) -> list:
        return runner.run_group(tasks[order[group % len(tasks)]], group)

    return run_group


def main(argv: list[str]) -> int:
    """`LAUNCHER leaf_train.driver.rl_tasks RL_CONFIG.json TASKS.jsonl MODEL_DIR`: one RL chunk (every rank)."""
    from leaf_cli.tasks import load_tasks

    if len(argv) != 3:
        print("usage: python -m leaf_train.driver.rl_tasks RL_CONFIG.json TASKS.jsonl MODEL_DIR", file=sys.stderr)
        return 2
    cfg = RLConfig.model_validate_json(Path(argv[0]).read_text(encoding="utf-8"))
    run_rl(cfg, load_tasks(Path(argv[1])).tasks, Path(argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
