"""Learning against a control: the same RL run at the configured learning rate and at lr 0, with the same
seeds, over several seeds, and a test of whether training beat the control.

The control arm runs the same rollouts, grading and advantages with lr 0. It computes no loss and no
backward pass: the trainer skips an lr-0 update (`Trainer.step`, `frozen`), which could not move the
weights. So its policy never moves, and its episodes measure what the starting policy does under the same
seeds. Both arms see the same tasks in the same order and the same sampler seeds until the first update. The
verdict compares the outcomes of the last `window` steps of every seed, pooled per arm, with Fisher's
exact test (one-sided, training > control). If training has no effect, the late episodes of both arms are
draws of the same success probability and the test rejects with probability ≤ α (Fisher's test is exact
conditional on the totals and conservative otherwise): a false pass below α. Requiring training ahead in
every seed as well can only lower that rate. That bound holds for one look: each configuration tried on
the same seeds before the one kept is another chance to pass by luck, so k configurations tried give a
false-pass bound of k·α (union bound); the README records how many were tried.

`python -m leaf_train.rl.control --config FILE --out DIR [--seeds 0,1,2] [--window 3]` runs both arms,
writes `learning.json` and `learning.png` (mean reward per step of both arms, one thin line per seed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import BaseModel

from leaf_train.rl.config import RLConfig, load_config
from leaf_train.rl.metrics import read_metrics

ARMS = ("train", "control")


class LearningVerdict(BaseModel):
    seeds: list[int]
    window: int
    curves: dict[str, dict[int, list[float]]]
    """arm -> seed -> mean reward per step."""
    late: dict[str, tuple[int, int]]
    """arm -> (successes, episodes) over the last `window` steps of every seed."""
    ahead_in_every_seed: bool
    p_value: float
    alpha: float
    passed: bool


def run_arms(cfg: RLConfig, seeds: list[int], out: Path) -> dict[str, dict[int, list[float]]]:
    """Run (or resume) both arms for every seed under `out/<arm>/seed-<n>`; returns the reward curves."""
    from leaf_train.rl.run import main

    curves: dict[str, dict[int, list[float]]] = {arm: {} for arm in ARMS}
    for seed in seeds:
        for arm in ARMS:
            lr = cfg.optim.lr if arm == "train" else 0.0
            run = cfg.model_copy(deep=True, update={"seed": seed, "out_dir": str(out / arm / f"seed-{seed}")})
            run.optim.lr = lr
            run.logging.plot = False
            folder = main(run)
            curves[arm][seed] = [r["reward_mean"] for r in read_metrics(folder / "metrics.jsonl")]
    return curves


def verdict(curves: dict[str, dict[int, list[float]]], episodes_per_step: int, window: int,
            alpha: float = 0.01) -> LearningVerdict:
    """Fisher's exact test, one-sided, on the pooled outcomes of the last `window` steps."""
    from scipy.stats import fisher_exact

    seeds = sorted(curves["train"])
    late = {}
    for arm in ARMS:
        wins = sum(round(r * episodes_per_step) for s in seeds for r in curves[arm][s][-window:])
        late[arm] = (wins, episodes_per_step * window * len(seeds))
    (a, n), (b, m) = late["train"], late["control"]
    p = float(fisher_exact([[a, n - a], [b, m - b]], alternative="greater")[1])
    ahead = all(sum(curves["train"][s][-window:]) > sum(curves["control"][s][-window:]) for s in seeds)
    return LearningVerdict(seeds=seeds, window=window, curves=curves, late=late, ahead_in_every_seed=ahead,
                           p_value=p, alpha=alpha, passed=ahead and p < alpha)


def plot(result: LearningVerdict, png: Path) -> Path:
    """Mean reward per step of both arms (thick: mean over seeds; thin: each seed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8), dpi=120)
    for arm, colour in zip(ARMS, ("tab:blue", "tab:gray")):
        runs = [result.curves[arm][s] for s in result.seeds]
        steps = range(min(len(r) for r in runs))
        for r in runs:
            ax.plot(list(steps), r[: len(steps)], color=colour, lw=0.8, alpha=0.35)
        mean = [sum(r[i] for r in runs) / len(runs) for i in steps]
        label = "DPPO (lr from the config)" if arm == "train" else "control (lr 0, same seeds)"
        ax.plot(list(steps), mean, color=colour, lw=2.2, marker="o", label=label)
    ax.set_xlabel("training step")
    ax.set_ylabel("mean reward (task test passes)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{len(result.seeds)} seeds; last {result.window} steps: Fisher p = {result.p_value:.2g}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)
    return png


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m leaf_train.rl.control", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--window", type=int, default=3)
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    seeds = [int(s) for s in args.seeds.split(",")]
    curves = run_arms(cfg, seeds, args.out)
    result = verdict(curves, cfg.rollout.group_size * cfg.rollout.groups_per_step, args.window)
    (args.out / "learning.json").write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    plot(result, args.out / "learning.png")
    print(json.dumps({"late": result.late, "p_value": result.p_value, "ahead_in_every_seed": result.ahead_in_every_seed,
                      "passed": result.passed}))
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
