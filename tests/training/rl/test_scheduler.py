"""Bounded staleness: rollout threads run ahead of the trainer by at most max_staleness versions."""

from __future__ import annotations

import threading
import time

import pytest

from leaf_train.rl.samples import TokenSample
from leaf_train.rl.scheduler import RolloutScheduler, RunGroup


def _recorder(scheduler_box: list, started: dict[int, int], delay: float = 0.0):
    def run_group(group: int) -> list[TokenSample]:
        started[group] = scheduler_box[0].version  # the policy version when the group was admitted
        time.sleep(delay * (group % 3 == 0))  # some groups are slow; none is dropped
        return [TokenSample(ids=[1, 2], loss_mask=[0, 1], behaviour_logprobs=[0.0, -1.0], versions=[-1, started[group]],
                            reward=0.0, task_id=f"g{group}")]

    return run_group


@pytest.mark.parametrize("max_staleness", [0, 1, 2])
@pytest.mark.parametrize("workers", [1, 3])
def test_groups_start_within_the_staleness_bound(max_staleness: int, workers: int) -> None:
    box: list = []
    started: dict[int, int] = {}
    scheduler = RolloutScheduler(_recorder(box, started, 0.01), groups_per_step=2, max_staleness=max_staleness,
                                 workers=workers)
    box.append(scheduler)
    scheduler.start()
    try:
        for step in range(5):
            groups = scheduler.batch(step)
            assert [g[0].task_id for g in groups] == [f"g{2 * step}", f"g{2 * step + 1}"]
            time.sleep(0.02)  # the trainer is busy; rollouts run ahead meanwhile
            scheduler.set_version(step + 1)
    finally:
        scheduler.stop()
    for group, version in started.items():
        step = group // 2
        assert step - version <= max_staleness, (group, version)
    if max_staleness > 0:
        assert any(group // 2 - v > 0 for group, v in started.items())  # it really ran ahead


def test_worker_error_reaches_the_trainer() -> None:
    def boom(group: int) -> list[TokenSample]:
        raise RuntimeError("engine died")

    scheduler = RolloutScheduler(boom, groups_per_step=1, max_staleness=0).start()
    with pytest.raises(RuntimeError, match="rollout worker failed"):
        scheduler.batch(0)
    scheduler.stop()


def _started_log() -> tuple[list[int], RunGroup]:
    """(the groups started so far, a run_group that records each and returns one sample)."""
    started: list[int] = []
    lock = threading.Lock()

    def run_group(group: int) -> list[TokenSample]:
        with lock:
            started.append(group)
        return [TokenSample(ids=[1], loss_mask=[0], behaviour_logprobs=[0.0], versions=[-1], reward=0.0, task_id="t")]

    return started, run_group


def test_resume_starts_at_the_data_position() -> None:
    seen, run_group = _started_log()
    scheduler = RolloutScheduler(run_group, groups_per_step=2, max_staleness=0, first_group=6, version=3).start()
    scheduler.batch(3)
    scheduler.stop()
    assert sorted(seen)[:2] == [6, 7]


def test_no_group_past_the_last_step_starts() -> None:
    """The run ends after step 2; with staleness 2 the workers may run two steps ahead, yet none starts a
    group of step 3 or 4 (its rollouts would be thrown away, and stop() would wait for them)."""
    started, run_group = _started_log()
    scheduler = RolloutScheduler(run_group, groups_per_step=2, max_staleness=2, workers=3, end_group=6).start()
    for step in range(3):
        scheduler.batch(step)
        scheduler.set_version(step + 1)
    time.sleep(0.2)  # room for a worker that would start a group of step 3
    scheduler.stop()
    assert sorted(started) == [0, 1, 2, 3, 4, 5]
