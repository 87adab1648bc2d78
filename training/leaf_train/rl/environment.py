"""What the RL loop trains in: an environment hands out the task of each rollout group, prepares each
episode's start state and grades its patch.

Two implementations: the toy repositories of `toy_env.py` (`leaf train rl` with no task file) and a task
file (`TaskFileEnvironment`: TaskPilot's accepted tasks, which the iteration driver trains on). The loop
(`leaf_train.rl.run.train`) and the group runner see only this protocol.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from leaf_cli.llm.messages import Conversation
from leaf_cli.tasks import GradeResult, Sandbox, Task
from leaf_cli.tools import TOOLS, Tool, Workspace


@dataclass
class EpisodeStart:
    """One episode's fresh start state (under a scratch folder the runner deletes afterwards)."""

    workspace: Workspace
    patch: Callable[[], str]
    """The episode's diff against its start state, untracked files included (the trajectory's patch)."""
    conversation: Conversation | None = None
    """Messages before the task (a solved example); None = the system prompt alone."""


class Environment(Protocol):
    tools: tuple[Tool, ...]
    """The tools every episode offers the model."""

    def task(self, group: int) -> Task:
        """The task of rollout group `group`: a pure function of the number, so ranks and resumes agree."""
        ...

    def start(self, task: Task, scratch: Path) -> EpisodeStart:
        """A fresh start state of `task` under the empty folder `scratch`."""
        ...

    def grade(self, task: Task, patch: str) -> GradeResult:
        """The verdict on an episode's patch (reward 1 when resolved)."""
        ...


class SeededTasks:
    """Group g runs the task at position g (cyclically) of a seeded permutation of a task list."""

    def __init__(self, tasks: list[Task], seed: int) -> None:
        if not tasks:
            raise ValueError("no tasks to train on")
        self.tasks = tasks
        self.order = random.Random(seed).sample(range(len(tasks)), len(tasks))

    def task(self, group: int) -> Task:
        return self.tasks[self.order[group % len(self.tasks)]]


class TaskFileEnvironment(SeededTasks):
    """Tasks of a task file (SWE-bench-style records), each episode set up exactly as an eval attempt:
    a single-commit repository of the start state (hidden paths removed), Bash in the sandbox with the
    task's cached test environment first on PATH, the five tools; graded by leaf's grader with protected
    and hidden paths left out of the patch."""

    def __init__(self, tasks: list[Task], sandbox: Sandbox, seed: int, base_dir: Path | None = None) -> None:
        super().__init__(tasks, seed)
        self.sandbox, self.base_dir = sandbox, base_dir
        self.tools: tuple[Tool, ...] = TOOLS

    def start(self, task: Task, scratch: Path) -> EpisodeStart:
        from leaf_cli.tasks import agent_workspace, get_env, make_attempt_workspace, workspace_diff

        ws = make_attempt_workspace(task, scratch, self.base_dir)
        box = self.sandbox.for_task(task)
        tools_ws = agent_workspace(ws, get_env(task, self.base_dir, box), box)
        return EpisodeStart(workspace=tools_ws, patch=lambda: workspace_diff(ws))

    def grade(self, task: Task, patch: str) -> GradeResult:
        from leaf_cli.tasks import get_env, grade, matcher, without_paths

        graded, _ = without_paths(patch, matcher(task.protected + task.hidden_paths))
        env = get_env(task, self.base_dir, self.sandbox.for_task(task))
        return grade(task, graded, self.sandbox, base_dir=self.base_dir, env=env)
