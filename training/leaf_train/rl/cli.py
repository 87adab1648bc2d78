"""`leaf train rl --config FILE [--out DIR] [--tasks TASKS.jsonl]`: the RL stage's command line (`leaf train`
imports it lazily; `python -m leaf_train.rl` is the same, which is what `accelerate launch -m` runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from leaf_cli.errors import LeafError


def rl_command(config: Path, out: Path | None = None, tasks: Path | None = None, ray: str | None = None) -> Path:
    """Run the RL run described by `config` (YAML); `out` overrides its `out_dir`; `tasks` (a task file)
    replaces the toy environment; `ray` (an address) puts the rollout workers on Ray actors. Returns the run folder.

    Bad input (missing file, invalid field, missing model, broken task file) raises LeafError with one clear line.
    """
    from leaf_train.rl.config import load_config
    from leaf_train.rl.run import main as run_main

    cfg = load_config(config)
    if out is not None:
        cfg = cfg.model_copy(update={"out_dir": str(out)})
    if ray:
        from leaf_cli.executor.config import from_flag

        cfg = cfg.model_copy(update={"executor": from_flag(ray, cfg.executor)})
    if tasks is None:
        return run_main(cfg)
    from leaf_cli.tasks import load_tasks

    found = load_tasks(tasks)
    if found.errors:
        raise LeafError(f"bad task file: {found.errors[0]}")
    if not found.tasks:
        raise LeafError(f"{tasks} holds no tasks")
    return run_main(cfg, found.tasks, found.base_dir)


def main(argv: list[str]) -> int:
    """Parse the flags, run, and return the exit code (2 with one line for bad input)."""
    parser = argparse.ArgumentParser(prog="leaf train rl", description="Train the policy with DPPO on Leaf rollouts.")
    parser.add_argument("--config", type=Path, required=True, help="RL config (YAML), e.g. training/configs/cpu-smoke.yaml")
    parser.add_argument("--out", type=Path, default=None, help="Run folder (overrides the config's out_dir).")
    parser.add_argument("--tasks", type=Path, default=None,
                        help="Train on this task file (JSONL) instead of the config's toy environment.")
    parser.add_argument("--ray", default=None, metavar="ADDRESS",
                        help="Rollout workers as Ray actors: local, auto, ray://HOST:PORT or HOST:PORT.")
    args = parser.parse_args(argv)
    from leaf_cli.executor import close_executors

    try:
        folder = rl_command(args.config, args.out, args.tasks, args.ray)
    except LeafError as exc:
        print(f"leaf: error: {exc}", file=sys.stderr)
        return 2
    finally:
        close_executors()  # a `--ray local` cluster stops with the run
    print(f"run folder: {folder}")
    return 0
