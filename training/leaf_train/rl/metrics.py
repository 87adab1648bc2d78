"""Metrics sinks: one line per step on stdout and in metrics.jsonl; TensorBoard and W&B when installed."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from leaf_train.rl.config import LoggingConfig

_SHOWN = ("reward_mean", "loss", "zero_variance_groups", "masked_pos", "masked_neg", "ratio_mean",
          "staleness_max", "episode_tokens_mean", "rollout_wait_seconds", "train_seconds")


class MetricsLogger:
    def __init__(self, out_dir: Path, cfg: LoggingConfig, run_config: dict[str, Any],
                 stream: TextIO | None = None) -> None:
        self.path = out_dir / "metrics.jsonl"
        self.stream = stream or sys.stdout
        self._tb = None
        self._wandb = None
        if cfg.tensorboard and importlib.util.find_spec("tensorboard") is not None:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(out_dir / "tensorboard"))
        if cfg.wandb_project and importlib.util.find_spec("wandb") is not None:
            import wandb

            self._wandb = wandb.init(project=cfg.wandb_project, config=run_config)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        record = {"step": step, **{k: round(v, 6) if isinstance(v, float) else v for k, v in metrics.items()}}
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        shown = " ".join(f"{k}={_fmt(metrics[k])}" for k in _SHOWN if k in metrics)
        print(f"step {step:4d} {shown}", file=self.stream, flush=True)
        if self._tb is not None:
            for k, v in metrics.items():
                self._tb.add_scalar(k, v, step)
        if self._wandb is not None:
            self._wandb.log(metrics, step=step)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The records of a metrics.jsonl file, in order (a resumed run's repeated steps: the last one wins)."""
    by_step: dict[int, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            by_step[record["step"]] = record
    return [by_step[k] for k in sorted(by_step)]


def _fmt(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
