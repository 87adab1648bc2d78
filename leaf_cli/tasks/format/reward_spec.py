"""How a verifier-graded task is checked (Harbor / Terminal-Bench 2.0, PatchEval): the spec the importers
store as the task's `reward` field, and read back here."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from leaf_cli.tasks.format.task import Task


class RewardSpec(BaseModel):
    """How a reward-graded task is verified (stored as the task's `reward` field)."""

    kind: Literal["harbor", "patcheval"]
    command: str = Field(description="Shell command run in the workdir, e.g. `bash /tests/test.sh`.")
    tests_dir: str | None = Field(None, description="Host folder copied to `container_tests_dir` first.")
    container_tests_dir: str = "/tests"
    logs_dir: str = Field("/logs/verifier", description="Where the script writes reward.json / reward.txt.")
    workdir: str = Field("/app", description="The agent's working directory inside the image.")
    patch_path: str | None = Field(None, description="PatchEval: where the model's patch is put.")
    success: Literal["reward", "exit_code", "patcheval"] = "reward"
    threshold: float = Field(1.0, description="A reward at or above this counts as resolved.")
    env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = 600.0


def reward_spec(task: Task) -> RewardSpec | None:
    """The task's reward spec, or None for a task graded by FAIL_TO_PASS / PASS_TO_PASS."""
    raw = (task.model_extra or {}).get("reward")
    return RewardSpec.model_validate(raw) if raw is not None else None
