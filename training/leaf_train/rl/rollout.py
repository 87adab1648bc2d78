"""Rollouts: run one group of episodes of an environment's task with `run_episode`, grade them, keep the
token samples."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from leaf_cli.agent import EpisodeHooks, Limits, run_episode
from leaf_cli.llm.engine import Sampling
from leaf_cli.tasks import Task
from leaf_train.rl.config import RolloutConfig
from leaf_train.rl.environment import Environment
from leaf_train.rl.samples import TokenSample, sample_from_trajectory


class GroupRunner:
    """Runs `group_size` episodes of group g's task on an engine and returns their graded samples."""

    def __init__(self, engine: Any, cfg: RolloutConfig, env: Environment, trajectories: Path | None = None) -> None:
        self.engine, self.cfg, self.env, self.trajectories = engine, cfg, env, trajectories
        self.sampling = Sampling(temperature=cfg.temperature, top_p=cfg.top_p, top_k=cfg.top_k, min_p=0.0,
                                 max_tokens=cfg.max_tokens, enable_thinking=False)
        self.limits = Limits(max_turns=cfg.max_turns, max_context=cfg.max_context)

    def run_group(self, group: int) -> list[TokenSample]:
        """Group g's episodes, concurrently when the engine batches (results in episode order)."""
        task = self.env.task(group)
        names = [f"g{group:05d}-e{i}" for i in range(self.cfg.group_size)]
        if self.cfg.batch <= 1:
            return [self.run_episode(task, n) for n in names]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(self.cfg.batch, len(names)), thread_name_prefix="episode") as pool:
            return list(pool.map(lambda n: self.run_episode(task, n), names))

    def run_episode(self, task: Task, run_id: str) -> TokenSample:
        scratch = Path(tempfile.mkdtemp(prefix="leaf-rl-"))
        try:
            start = self.env.start(task, scratch)
            path = self.trajectories / f"{run_id}.jsonl" if self.trajectories is not None else None
            traj = run_episode(task.problem_statement, self.engine, start.workspace, sampling=self.sampling,
                               conversation=start.conversation, limits=self.limits, tools=self.env.tools,
                               run_id=run_id, hooks=EpisodeHooks(trajectory_path=path, patch_fn=start.patch))
            verdict = self.env.grade(task, traj.patch)
            sample = sample_from_trajectory(traj, 1.0 if verdict.resolved else 0.0, task.instance_id)
            sample.extra = {"turns": float(len(traj.turns)), "infra_failure": float(verdict.infra_failure is not None)}
            return sample
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
