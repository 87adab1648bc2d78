"""Grade a patch: the one switch between graders.

`grade` picks the grader in one place:
- a task with a `reward` spec (Harbor / Terminal-Bench 2.0, PatchEval) is graded by its verifier script and
  the reward it writes (`reward.py`): Harbor in the agent's workspace, PatchEval with the patch;
- a SWE-bench or SWE-bench Pro import (`eval_type` swebench / swebench_pro) runs the benchmark's own grading
  script in a fresh container of its image and parses the log with the recorded parser (`swebench.py`);
- every other task gets leaf's own pytest grading (`pytest.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from leaf_cli.tasks.envs.backends import make_sandbox
from leaf_cli.tasks.envs.sandbox import Sandbox
from leaf_cli.tasks.envs.venv import Environment
from leaf_cli.tasks.format.reward_spec import reward_spec
from leaf_cli.tasks.format.task import Task
from leaf_cli.tasks.grading.pytest import grade_tests
from leaf_cli.tasks.grading.reward import from_reward, grade_reward
from leaf_cli.tasks.grading.swebench import grade_in_image
from leaf_cli.tasks.grading.verdict import GradeResult

if TYPE_CHECKING:
    from leaf_cli.tasks.envs.image import ImageSession

IMAGE_GRADERS = ("swebench", "swebench_pro")
"""`eval_type`s graded by the benchmark's own script inside the task's image."""


def grader_of(task: Task) -> str:
    """Which grader `grade` uses for `task`: reward, swebench, swebench_pro or tests."""
    if reward_spec(task) is not None:
        return "reward"
    kind = (task.model_extra or {}).get("eval_type")
    return kind if kind in IMAGE_GRADERS else "tests"


def grade(task: Task, patch: str, sandbox: Sandbox | None = None, *, base_dir: Path | None = None,
          env: Environment | None = None, workspace: Path | None = None, session: "ImageSession | None" = None,
          p2p_skip_ok: bool = False, log_path: Path | None = None) -> GradeResult:
    """Grade `patch` (a unified diff against the task's start state) for `task`, with the task's grader.

    `workspace` (the agent's tree) and `session` (its live container) are used by Harbor tasks, graded in
    place; `log_path` keeps the grading log of image-graded tasks. Never raises for a bad patch or a broken
    environment: those come back as an unresolved, labelled result. A sandbox that cannot run the task at
    all (no Docker daemon for an image task) raises LeafError."""
    sandbox = sandbox or make_sandbox(None)
    kind = grader_of(task)
    if kind == "reward":
        return from_reward(task, patch, grade_reward(task, sandbox, workspace=workspace, patch=patch,
                                                     container=session.name if session else None))
    if kind in IMAGE_GRADERS:
        return grade_in_image(task, patch, sandbox, p2p_skip_ok=p2p_skip_ok, log_path=log_path)
    return grade_tests(task, patch, sandbox, base_dir=base_dir, env=env, p2p_skip_ok=p2p_skip_ok)

