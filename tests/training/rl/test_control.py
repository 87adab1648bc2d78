"""The learning-vs-control verdict: Fisher's exact test on the late episodes of both arms. Its false-pass
rate (training had no effect, both arms draw the same success probability) is simulated here and must stay
below 1%, for the run's shape (3 seeds, the last 2 steps of 6 episodes) and a range of base rates."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("scipy")

from leaf_train.rl.control import verdict  # noqa: E402

SEEDS, STEPS, EPISODES, WINDOW = (0, 1, 2), 5, 6, 2  # the shape of rl-learning.yaml's run


def _curves(p_train: float, p_control: float, rng: random.Random) -> dict[str, dict[int, list[float]]]:
    def run(p: float) -> list[float]:
        return [sum(rng.random() < p for _ in range(EPISODES)) / EPISODES for _ in range(STEPS)]

    return {"train": {s: run(p_train) for s in SEEDS}, "control": {s: run(p_control) for s in SEEDS}}


@pytest.mark.parametrize("p", [0.05, 0.2, 0.5])
def test_false_pass_rate_is_below_one_percent(p: float) -> None:
    rng = random.Random(int(p * 100))
    passes = sum(verdict(_curves(p, p, rng), EPISODES, WINDOW).passed for _ in range(1000))
    assert passes / 1000 < 0.01, passes


def test_a_real_improvement_passes() -> None:
    rng = random.Random(1)
    # power for this shape: 93 of 100 simulated runs at 0.7 vs 0.2
    assert sum(verdict(_curves(0.7, 0.2, rng), EPISODES, WINDOW).passed for _ in range(100)) >= 85


def test_the_verdict_counts_the_late_window() -> None:
    curves = {"train": {0: [0.0, 0.5, 1.0]}, "control": {0: [0.0, 0.0, 0.5]}}
    result = verdict(curves, 4, 2)
    assert result.late == {"train": (6, 8), "control": (2, 8)} and result.ahead_in_every_seed
