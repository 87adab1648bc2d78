"""The reward curve of a run as a PNG (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

from leaf_train.rl.metrics import read_metrics


def plot_reward(metrics_path: Path, png: Path, window: int = 5) -> Path:
    """Mean reward per step and its moving average over `window` steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(metrics_path)
    steps = [r["step"] for r in records]
    reward = [r["reward_mean"] for r in records]
    smooth = [sum(reward[max(0, i - window + 1):i + 1]) / len(reward[max(0, i - window + 1):i + 1])
              for i in range(len(reward))]
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    ax.plot(steps, reward, marker="o", lw=1, alpha=0.5, label="mean reward")
    ax.plot(steps, smooth, lw=2, label=f"moving average ({window})")
    ax.set_xlabel("training step")
    ax.set_ylabel("reward (tests pass)")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)
    return png
