"""Grading by the task's own verifier script and the reward it writes (Harbor / Terminal-Bench 2.0, PatchEval).

`grade_reward` gives the verifier a scratch folder, lets the task's grader run it where its benchmark runs it
(grading/harbor.py, grading/patcheval.py; the places themselves are envs/verifier_runs.py), and decides from the
script's exit and the reward it wrote: the task's reward is the `reward` key (PatchEval's `strict`), else
its only key, else the least of them (each must pass).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from pydantic import BaseModel, Field

from leaf_cli.errors import LeafError
from leaf_cli.tasks.envs.proc import RunResult
from leaf_cli.tasks.envs.sandbox import Sandbox
from leaf_cli.tasks.format.reward_spec import RewardSpec, reward_spec
from leaf_cli.tasks.format.task import Task
from leaf_cli.tasks.grading.harbor import read_reward, run_harbor
from leaf_cli.tasks.grading.patcheval import patcheval_rewards, run_patcheval
from leaf_cli.tasks.grading.verdict import GradeResult


class RewardResult(BaseModel):
    """The verdict: the reward read (or 1/0 from the exit code) and whether it counts as resolved."""

    instance_id: str
    resolved: bool = False
    reward: float | None = None
    rewards: dict[str, float] = Field(default_factory=dict, description="Every reward the verifier wrote.")
    exit_code: int | None = None
    infra_failure: str | None = Field(None, description="no_reward, bad_reward or timeout.")
    error: str | None = None
    test_seconds: float = 0.0
    sandbox: str = ""
    output_tail: str = ""


def grade_reward(task: Task, sandbox: Sandbox, *, workspace: Path | None = None, patch: str = "",
                 container: str | None = None) -> RewardResult:
    """Run the task's verifier. Harbor grades `workspace` in place: inside `container` (the agent's live
    container, as Harbor runs tests/test.sh after the agent) when given, else in a fresh container of the image
    with the workspace mounted; PatchEval grades `patch` in a fresh container. Raises LeafError when the
    sandbox cannot run this task (no Docker daemon, no image)."""
    spec = reward_spec(task)
    if spec is None:
        raise LeafError(f"{task.instance_id} has no reward spec; it is graded by its test lists")
    if spec.kind == "harbor" and workspace is None:
        raise LeafError(f"{task.instance_id}: a Harbor task is graded in the agent's workspace; none given")
    with tempfile.TemporaryDirectory(prefix="leaf-verifier-") as tmp:
        scratch = Path(tmp)
        (scratch / "logs" / "verifier").mkdir(parents=True)
        (scratch / "home").mkdir()
        if spec.kind == "harbor":
            run = run_harbor(task, spec, sandbox, scratch, workspace, container, patch)
        else:
            run = run_patcheval(task, spec, sandbox, scratch, workspace, patch)
        return decide(task, spec, run, scratch / "logs" / "verifier", sandbox.name)


def decide(task: Task, spec: RewardSpec, run: RunResult, logs: Path, sandbox_name: str) -> RewardResult:
    """The verdict from the script's exit and the reward file it wrote (or PatchEval's markers)."""
    result = RewardResult(instance_id=task.instance_id, exit_code=run.returncode, test_seconds=run.seconds,
                          sandbox=sandbox_name, output_tail=(run.stdout + run.stderr)[-4000:])
    if run.timed_out:
        result.infra_failure, result.error = "timeout", f"the verifier ran past {spec.timeout_s:.0f} s"
        return result
    if spec.success == "exit_code":
        result.rewards = {"reward": 1.0 if run.returncode == 0 else 0.0}
    elif spec.success == "patcheval":
        rewards = patcheval_rewards(run.stdout + run.stderr)
        if rewards is None:
            result.infra_failure = "no_reward"
            result.error = f"PatchEval's fix-run.sh never reported (exit {run.returncode})"
            return result
        result.rewards = rewards
    else:
        try:
            rewards = read_reward(logs)
        except ValueError as exc:
            result.infra_failure, result.error = "bad_reward", str(exc)
            return result
        if rewards is None:
            result.infra_failure = "no_reward"
            result.error = f"the verifier wrote no reward.json or reward.txt (exit {run.returncode})"
            return result
        result.rewards = rewards
    result.reward = primary_reward(result.rewards)
    result.resolved = result.reward >= spec.threshold
    return result


def primary_reward(rewards: dict[str, float]) -> float:
    """The task's one reward: `reward` (or PatchEval's `strict`), else the only key, else the least."""
    for key in ("reward", "strict"):
        if key in rewards:
            return rewards[key]
    return min(rewards.values()) if rewards else 0.0


def from_reward(task: Task, patch: str, result: RewardResult) -> GradeResult:
    """A verifier's verdict as a GradeResult (no test lists: the reward decides)."""
    spec = reward_spec(task)
    how = "empty" if not patch.strip() and spec.kind == "patcheval" else (
        "by_verifier" if spec.kind == "patcheval" else "in_workspace")
    return GradeResult(instance_id=task.instance_id, resolved=result.resolved, patch_applied=how,
                       exit_code=result.exit_code, infra_failure=result.infra_failure, error=result.error,
                       test_seconds=result.test_seconds, sandbox=result.sandbox, grader="reward",
                       reward=result.reward, rewards=result.rewards, apply_log=result.output_tail[-2000:])
