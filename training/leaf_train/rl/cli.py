"""`leaf train rl --config FILE [--out DIR]`: the RL stage's command line (`leaf train` imports it lazily)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from leaf_cli.errors import LeafError


def rl_command(config: Path, out: Path | None = None) -> Path:
    """Run the RL run described by `config` (YAML); `out` overrides its `out_dir`. Returns the run folder.

    Bad input (missing file, invalid field, missing model) raises LeafError with one clear line.
    """
    from leaf_train.rl.config import load_config
    from leaf_train.rl.run import main as run_main

    cfg = load_config(config)
    if out is not None:
        cfg = cfg.model_copy(update={"out_dir": str(out)})
    return run_main(cfg)


def main(argv: list[str]) -> int:
    """Parse `--config FILE [--out DIR]`, run, and return the exit code (2 with one line for bad input)."""
    parser = argparse.ArgumentParser(prog="leaf train rl", description="Train the policy with DPPO on Leaf rollouts.")
    parser.add_argument("--config", type=Path, required=True, help="RL config (YAML), e.g. training/configs/cpu-smoke.yaml")
    parser.add_argument("--out", type=Path, default=None, help="Run folder (overrides the config's out_dir).")
    args = parser.parse_args(argv)
    try:
        folder = rl_command(args.config, args.out)
    except LeafError as exc:
        print(f"leaf: error: {exc}", file=sys.stderr)
        return 2
    print(f"run folder: {folder}")
    return 0
