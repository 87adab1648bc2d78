"""Harbor's grading (0.25.0's verifier): after the agent finishes, stale reward files are deleted, `tests/` is
copied to /tests and `bash /tests/test.sh` runs, in the agent's container (`environment_mode` shared, the
default) or in a fresh container of the verifier's image that gets only the agent's artifacts (separate); on
the docker sandbox without a live container, in a fresh container of the image with the workspace mounted;
on the host-path sandboxes, on the host with container paths rewritten (envs/verifier_runs.py runs each).
The script writes `reward.json` (an object of numbers, booleans counting as 0/1, or a bare number) or
`reward.txt` (a number) under /logs/verifier; every key is kept (`read_reward`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.tasks.envs.proc import RunResult
from leaf_cli.tasks.envs.sandbox import Sandbox
from leaf_cli.tasks.envs.verifier_runs import network_switch, run_in_container, run_in_image, run_on_host, run_separate
from leaf_cli.tasks.format.reward_spec import RewardSpec
from leaf_cli.tasks.format.task import Task


def run_harbor(task: Task, spec: RewardSpec, sandbox: Sandbox, scratch: Path, workspace: Path | None,
               container: str | None, patch: str) -> RunResult:
    """Harbor's verifier in the place its mode names: a separate container, the agent's live `container`,
    a fresh container of the image (docker sandbox), or the host."""
    separate = ((task.model_extra or {}).get("harbor") or {}).get("verifier_mode") == "separate"
    if separate:
        if container is None and sandbox.name != "docker":
            raise LeafError(f"{task.instance_id}: its verifier runs in a separate container of its image; "
                            "grade it with --sandbox docker")
        if container is None:
            sandbox.prepare()
        return run_separate(task, spec, container, scratch)
    if container is not None:
        return run_in_container(spec, container, scratch, network_switch(task, container))
    if sandbox.name == "docker":
        return run_in_image(task, spec, sandbox, scratch, workspace, patch)
    return run_on_host(task, spec, sandbox, scratch, workspace)


def read_reward(logs: Path) -> dict[str, float] | None:
    """Every reward under `logs`, as Harbor reads them: reward.json first (an object of numbers, or one
    number, read as {"reward": x}; true/false count as 1/0), else reward.txt (one number). None when neither
    exists; ValueError for an empty file, a value that is not a finite number, or no value at all."""
    as_json, as_text = logs / "reward.json", logs / "reward.txt"
    if as_json.is_file():
        text = as_json.read_text(encoding="utf-8")
        if not text.strip():
            raise ValueError("reward.json is empty")
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"reward.json is not JSON ({exc.msg})") from None
        rewards = value if isinstance(value, dict) else {"reward": value}
        if not rewards:
            raise ValueError("reward.json holds no reward")
        return {str(k): _number(v, "reward.json") for k, v in rewards.items()}
    if as_text.is_file():
        text = as_text.read_text(encoding="utf-8")
        if not text.strip():
            raise ValueError("reward.txt is empty")
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"reward.txt is not a number: {text.strip()[:80]!r}") from None
        return {"reward": _number(number, "reward.txt")}
    return None


def _number(value: object, where: str) -> float:
    if not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ValueError(f"{where}: {value!r} is not a finite number")
    return float(value)
