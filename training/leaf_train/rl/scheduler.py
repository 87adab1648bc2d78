"""Asynchronous rollouts with bounded staleness: rollout threads run ahead of the trainer, paced.

Groups are numbered in the order the run consumes them; group g belongs to step b = g // groups_per_step.
A worker may *start* a group of step b only once the trainer's policy version is at least
b − max_staleness, so every token of a step-b batch was sampled by a policy at most `max_staleness` versions
old when training starts (0 = synchronous: step b's rollouts wait for step b−1's update). Nothing is
discarded: a slow episode delays its step instead of being dropped, and admission, not rejection, bounds
the lag (tinker-cookbook#822; AReaL's `max_head_offpolicyness`). No group past the run's last step starts:
its rollouts would be thrown away, and `stop` waits for the ones in flight.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

from leaf_train.rl.samples import TokenSample

RunGroup = Callable[[int], list[TokenSample]]
"""Runs group number g (its task is chosen from g) and returns its graded samples."""


class RolloutScheduler:
    """`workers` threads take groups in order; thread i runs them with `run_group`, or with `run_group[i]`
    when it is a list (one per rollout worker: the executor's actors, each holding its own engine).
    `end_group`: the first group the run will not consume (None: no end)."""

    def __init__(self, run_group: RunGroup | Sequence[RunGroup], *, groups_per_step: int, max_staleness: int,
                 workers: int = 1, first_group: int = 0, version: int = 0, end_group: int | None = None) -> None:
        self.run_groups = list(run_group) if isinstance(run_group, Sequence) else [run_group]
        self.per_step, self.max_staleness = groups_per_step, max_staleness
        self.next_group, self.end_group = first_group, end_group
        self.version = version
        self.done: dict[int, list[TokenSample]] = {}
        self.error: BaseException | None = None
        self.stopping = False
        self.cond = threading.Condition()
        self.threads = [threading.Thread(target=self._work, args=(self.run_groups[i % len(self.run_groups)],),
                                         name=f"rollout-{i}", daemon=True) for i in range(workers)]

    def start(self) -> "RolloutScheduler":
        for t in self.threads:
            t.start()
        return self

    def set_version(self, version: int) -> None:
        """The trainer finished an update: admit the groups the new version allows."""
        with self.cond:
            self.version = version
            self.cond.notify_all()

    def batch(self, step: int) -> list[list[TokenSample]]:
        """Block until every group of `step` is done; return them in group order."""
        wanted = range(step * self.per_step, (step + 1) * self.per_step)
        with self.cond:
            while not all(g in self.done for g in wanted):
                if self.error is not None:
                    raise RuntimeError("a rollout worker failed") from self.error
                self.cond.wait(timeout=1.0)
            return [self.done.pop(g) for g in wanted]

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        for t in self.threads:
            t.join(timeout=600)

    def _admissible(self, group: int) -> bool:
        return group // self.per_step - self.max_staleness <= self.version

    def _work(self, run_group: RunGroup) -> None:
        while True:
            with self.cond:
                while not self.stopping and not self._admissible(self.next_group):
                    self.cond.wait()
                if self.stopping or (self.end_group is not None and self.next_group >= self.end_group):
                    return
                group = self.next_group
                self.next_group += 1
            try:
                samples = run_group(group)
            except BaseException as exc:  # noqa: BLE001 - surfaced to the trainer by batch()
                with self.cond:
                    self.error = exc
                    self.cond.notify_all()
                return
            with self.cond:
                self.done[group] = samples
                self.cond.notify_all()
