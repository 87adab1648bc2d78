"""Stage 4: DPPO until the validation solve rate saturates.

RL runs in chunks of M = validation.every steps: each chunk continues the RL run from its newest
checkpoint to the next multiple of M, then that checkpoint is evaluated on the held-out tasks. Training
stops after P = validation.patience evaluations without an improvement over the best so far (the
starting policy's evaluation included), or at validation.max_steps. Every evaluation is recorded in the
state file as it finishes, so a killed stage resumes with the chunk in progress.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from leaf_cli.errors import LeafError
from leaf_cli.tasks import Task
from leaf_train.driver.config import ValidationConfig
from leaf_train.driver.evaluate import evaluate
from leaf_train.driver.state import Evaluation, StateFile
from leaf_train.rl.config import RLConfig

AfterChunk = Callable[[Path, int], None]
"""Called with (checkpoint folder, step) after a chunk, before its evaluation (consolidation's RFT)."""


def evaluations_without_improvement(evaluations: list[Evaluation], fixed: float | None = None,
                                    z: float = 1.0) -> int:
    """How many evaluations in a row, counted from the end, did not beat the best before them by more than
    min_delta (`fixed`, or z standard errors of the difference: leaf_train.driver.select.min_delta)."""
    from leaf_train.driver.select import min_delta

    best, since = None, 0
    for e in evaluations:
        if best is None or e.solve_rate > best.solve_rate + min_delta(best, e, fixed, z):
            best, since = e, 0
        else:
            since += 1
    return since


def stop_reason(evaluations: list[Evaluation], val: ValidationConfig) -> str | None:
    """Why RL should stop now, or None to train another chunk."""
    step = evaluations[-1].step if evaluations else 0
    if evaluations_without_improvement(evaluations, val.min_delta, val.z) >= val.patience:
        return f"saturated: {val.patience} evaluations without improvement"
    if step >= val.max_steps:
        return f"max_steps ({val.max_steps}) reached"
    return None


def checkpoint_dir(rl_dir: Path, step: int) -> Path:
    return rl_dir / "checkpoints" / f"step_{step:06d}"


def run_chunk(cfg: RLConfig, train: list[Task], launch: list[str] | None, folder: Path) -> None:
    """One RL chunk on the training tasks, with the RL stage's one loop (`leaf_train.rl.run.train` in the
    task-file environment): in this process, or under `launch` (accelerate/FSDP over several GPUs) as
    `LAUNCH leaf_train.rl --config CHUNK.json --tasks ITER/tasks/train.jsonl` on every rank."""
    if launch is None:
        from leaf_train.rl import run as rl_run

        out = Path(cfg.out_dir)
        rl_run.train(cfg, rl_run.make_environment(cfg, out, train), out)
        return
    import subprocess

    chunk = Path(cfg.out_dir) / "chunk-config.json"
    chunk.parent.mkdir(parents=True, exist_ok=True)
    chunk.write_text(cfg.model_dump_json(indent=2), encoding="utf-8")
    command = [*launch, "leaf_train.rl", "--config", str(chunk), "--tasks", str(folder / "tasks" / "train.jsonl")]
    code = subprocess.call(command)
    if code != 0:
        raise LeafError(f"the RL chunk to step {cfg.steps} failed (exit {code}): {' '.join(command)}")


def train_until_saturated(rl: RLConfig, val: ValidationConfig, start_model: Path, train: list[Task],
                          validation: list[Task], folder: Path, state: StateFile,
                          after_chunk: AfterChunk | None = None, launch: list[str] | None = None) -> dict:
    """Run RL chunks and evaluations until `stop_reason`; returns the stage's output."""
    rl_dir = folder / "rl"
    while (reason := stop_reason(state.state.evaluations, val)) is None:
        step = min(state.state.evaluations[-1].step + val.every, val.max_steps)
        checkpoint = checkpoint_dir(rl_dir, step)
        if not checkpoint.is_dir():
            print(f"rl: training to step {step}", file=sys.stderr, flush=True)
            run_chunk(rl.model_copy(update={"steps": step, "checkpoint_every": val.every, "out_dir": str(rl_dir),
                                            "resume": True}), train, launch, folder)
        if after_chunk is not None and step not in state.state.rft_after:
            after_chunk(checkpoint, step)
            state.state.rft_after.append(step)
            state.save()
        result = evaluate(checkpoint / "model", start_model, validation, folder / "eval" / f"step_{step:06d}", step,
                          rl, val)
        print(f"validation at step {step}: solve rate {result.solve_rate:.3f} "
              f"({result.resolved}/{result.attempts})", file=sys.stderr, flush=True)
        state.state.evaluations.append(result)
        state.save()
    return {"rl_dir": str(rl_dir), "steps": state.state.evaluations[-1].step, "stopped": reason}
