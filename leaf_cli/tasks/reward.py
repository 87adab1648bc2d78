"""Grading by the task's own verifier script and the reward it writes (Harbor / Terminal-Bench 2.0, PatchEval).

Harbor: after the agent finishes, `tests/` is copied to /tests and `bash /tests/test.sh` runs in the agent's
environment; it writes `reward.json` (`{"reward": x}`) or `reward.txt` (a number) under /logs/verifier.
PatchEval: a fresh container of the task's image gets the model's patch at /workspace/fix.patch and runs
`cd /workspace && bash fix-run.sh`; exit 0 (the proof of concept no longer succeeds and the unit tests pass)
means repaired.

On Docker the script runs as written, with the workspace mounted at the task's workdir. On the host-path
sandboxes (subprocess, bwrap) there is no image: the Dockerfile is ignored, `tests/` is copied to a scratch
folder, and in that copy (and in the command) every literal container path is rewritten to a host path:
/tests -> <scratch>/tests, /logs/verifier -> <scratch>/logs/verifier, /logs -> <scratch>/logs, the
workdir (e.g. /app) -> the workspace. The same folders are also exported as LEAF_TESTS_DIR,
LEAF_VERIFIER_DIR and LEAF_WORKDIR for scripts that prefer variables.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from leaf_cli.errors import LeafError
from leaf_cli.tasks.proc import RunResult, run_process
from leaf_cli.tasks.sandbox import Sandbox
from leaf_cli.tasks.task import Task


class RewardSpec(BaseModel):
    """How a reward-graded task is verified (stored as the task's `reward` field)."""

    kind: Literal["harbor", "patcheval"]
    command: str = Field(description="Shell command run in the workdir, e.g. `bash /tests/test.sh`.")
    tests_dir: str | None = Field(None, description="Host folder copied to `container_tests_dir` first.")
    container_tests_dir: str = "/tests"
    logs_dir: str = Field("/logs/verifier", description="Where the script writes reward.json / reward.txt.")
    workdir: str = Field("/app", description="The agent's working directory inside the image.")
    patch_path: str | None = Field(None, description="PatchEval: where the model's patch is put.")
    success: Literal["reward", "exit_code"] = "reward"
    threshold: float = Field(1.0, description="A reward at or above this counts as resolved.")
    env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = 600.0


class RewardResult(BaseModel):
    """The verdict: the reward read (or 1/0 from the exit code) and whether it counts as resolved."""

    instance_id: str
    resolved: bool = False
    reward: float | None = None
    exit_code: int | None = None
    infra_failure: str | None = Field(None, description="no_reward, bad_reward or timeout.")
    error: str | None = None
    test_seconds: float = 0.0
    sandbox: str = ""
    output_tail: str = ""


def reward_spec(task: Task) -> RewardSpec | None:
    """The task's reward spec, or None for a task graded by FAIL_TO_PASS / PASS_TO_PASS."""
    raw = (task.model_extra or {}).get("reward")
    return RewardSpec.model_validate(raw) if raw is not None else None


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
        if container is not None and spec.kind == "harbor":
            run = _run_in_container(spec, container, scratch)
        elif sandbox.name == "docker":
            run = _run_docker(task, spec, sandbox, scratch, workspace, patch)
        else:
            run = _run_host(task, spec, sandbox, scratch, workspace)
        return decide(task, spec, run, scratch / "logs" / "verifier", sandbox.name)


def _run_host(task: Task, spec: RewardSpec, sandbox: Sandbox, scratch: Path, workspace: Path | None) -> RunResult:
    if spec.kind == "patcheval" or workspace is None:
        raise LeafError(f"{task.instance_id}: PatchEval runs its own scripts inside its image "
                        f"({(task.model_extra or {}).get('image_name')}); grade it with --sandbox docker")
    workspace = workspace.resolve()
    mapping = host_mapping(spec, scratch, workspace)
    if spec.tests_dir:
        copy_rewritten(Path(spec.tests_dir), scratch / "tests", mapping)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(scratch / "home"), "LANG": "C.UTF-8",
           "LEAF_TESTS_DIR": str(scratch / "tests"), "LEAF_VERIFIER_DIR": str(scratch / "logs" / "verifier"),
           "LEAF_WORKDIR": str(workspace), **spec.env}
    return sandbox.run(["bash", "-c", rewrite(spec.command, mapping)], cwd=workspace, timeout=spec.timeout_s,
                       env=env, writable=[workspace, scratch])


def _run_docker(task: Task, spec: RewardSpec, sandbox: Sandbox, scratch: Path, workspace: Path | None,
                patch: str) -> RunResult:
    sandbox.prepare()  # no daemon: a LeafError naming what is missing, before anything runs
    image = (task.model_extra or {}).get("image_name")
    if not image:
        raise LeafError(f"{task.instance_id} names no image_name to grade in")
    argv = ["docker", "run", "--rm", "-i", "--network", "none", "-v", f"{scratch / 'logs' / 'verifier'}:{spec.logs_dir}"]
    if spec.tests_dir:
        shutil.copytree(spec.tests_dir, scratch / "tests")
        argv += ["-v", f"{scratch / 'tests'}:{spec.container_tests_dir}:ro"]
    if workspace is not None and spec.kind == "harbor":
        argv += ["-v", f"{workspace.resolve()}:{spec.workdir}"]
    if spec.patch_path:
        (scratch / "fix.patch").write_text(patch if patch.endswith("\n") or not patch else patch + "\n", encoding="utf-8")
        argv += ["-v", f"{scratch / 'fix.patch'}:{spec.patch_path}"]
    for key, value in spec.env.items():
        argv += ["-e", f"{key}={value}"]
    argv += ["-w", spec.workdir, str(image), "bash", "-c", spec.command]
    return run_process(argv, cwd=scratch, timeout=spec.timeout_s + 60, env=dict(os.environ))


def _run_in_container(spec: RewardSpec, container: str, scratch: Path) -> RunResult:
    """Harbor's order: copy tests/ into the agent's container, run the verifier there, copy the reward out."""
    env = dict(os.environ)
    steps = [["docker", "exec", container, "mkdir", "-p", spec.logs_dir, spec.container_tests_dir]]
    if spec.tests_dir:
        steps.append(["docker", "cp", f"{spec.tests_dir}/.", f"{container}:{spec.container_tests_dir}"])
    for argv in steps:
        done = run_process(argv, cwd=scratch, timeout=300, env=env)
        if not done.ok:
            raise LeafError(f"cannot set up the verifier in container {container}: {done.stderr.strip()[-300:]}")
    argv = ["docker", "exec", "-w", spec.workdir]
    for key, value in spec.env.items():
        argv += ["-e", f"{key}={value}"]
    run = run_process([*argv, container, "bash", "-c", spec.command], cwd=scratch, timeout=spec.timeout_s, env=env)
    run_process(["docker", "cp", f"{container}:{spec.logs_dir}/.", str(scratch / "logs" / "verifier")],
                cwd=scratch, timeout=300, env=env)  # nothing to copy = no reward, which decide() reports
    return run


def decide(task: Task, spec: RewardSpec, run: RunResult, logs: Path, sandbox_name: str) -> RewardResult:
    """The verdict from the script's exit and the reward file it wrote."""
    result = RewardResult(instance_id=task.instance_id, exit_code=run.returncode, test_seconds=run.seconds,
                          sandbox=sandbox_name, output_tail=(run.stdout + run.stderr)[-4000:])
    if run.timed_out:
        result.infra_failure, result.error = "timeout", f"the verifier ran past {spec.timeout_s:.0f} s"
        return result
    if spec.success == "exit_code":
        result.reward = 1.0 if run.returncode == 0 else 0.0
    else:
        try:
            result.reward = read_reward(logs)
        except ValueError as exc:
            result.infra_failure, result.error = "bad_reward", str(exc)
            return result
        if result.reward is None:
            result.infra_failure = "no_reward"
            result.error = f"the verifier wrote no reward.json or reward.txt (exit {run.returncode})"
            return result
    result.resolved = result.reward >= spec.threshold
    return result


def read_reward(logs: Path) -> float | None:
    """The reward under `logs`: reward.json (`{"reward": x}`, a bare number, or one numeric key) or
    reward.txt (a number); None when neither file exists; ValueError when the file holds no number."""
    as_json, as_text = logs / "reward.json", logs / "reward.txt"
    if as_json.is_file():
        try:
            value = json.loads(as_json.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"reward.json is not JSON ({exc.msg})") from None
        if isinstance(value, dict):
            numbers = {k: v for k, v in value.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            value = value["reward"] if "reward" in value else (next(iter(numbers.values())) if len(numbers) == 1 else None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise ValueError(f"reward.json holds no single reward value: {as_json.read_text(encoding='utf-8')[:200]!r}")
    if as_text.is_file():
        text = as_text.read_text(encoding="utf-8").strip()
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"reward.txt is not a number: {text[:80]!r}") from None
    return None


def host_mapping(spec: RewardSpec, scratch: Path, workspace: Path) -> dict[str, str]:
    """Container path -> host path, for the host-path sandboxes."""
    return {spec.container_tests_dir: str(scratch / "tests"), spec.logs_dir: str(scratch / "logs" / "verifier"),
            "/logs": str(scratch / "logs"), spec.workdir: str(workspace)}


def rewrite(text: str, mapping: dict[str, str]) -> str:
    """Replace each container path used as a whole path component (longest first, in one pass)."""
    keys = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.\-/])(" + "|".join(re.escape(k) for k in keys) + r")(?=[/\s\"'`;:|&)<>]|$)")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def copy_rewritten(src: Path, dest: Path, mapping: dict[str, str]) -> None:
    """Copy `src` to `dest`, rewriting container paths in every UTF-8 text file (binary files copied as is)."""
    shutil.copytree(src, dest, symlinks=True)
    for path in dest.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite(text, mapping)
        if new != text:
            path.write_text(new, encoding="utf-8")
