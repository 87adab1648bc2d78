"""Grading by the task's own verifier script and the reward it writes (Harbor / Terminal-Bench 2.0, PatchEval).

Harbor (0.25.0's verifier): after the agent finishes, stale reward files are deleted, `tests/` is copied to
/tests and `bash /tests/test.sh` runs, in the agent's container (`environment_mode` shared, the default) or
in a fresh container of the verifier's image that gets only the agent's artifacts (separate). The script
writes `reward.json` (an object of numbers, booleans counting as 0/1, or a bare number) or `reward.txt` (a
number) under /logs/verifier; every key is kept, and the task's reward is the `reward` key, else its
only key, else the least of them (each must pass).
PatchEval (its `run_evaluation.py`): a fresh container of the task's image gets the model's patch at
/workspace/fix.patch; `prepare.sh` then `fix-run.sh` (the proof of concept no longer works), and only then
`prepare.sh` again and `unit_test.sh` (nothing else broke; a task without one passes). Strict success needs
both; the PoC-only outcome is kept beside it (`rewards`: strict, poc), so both of PatchEval's rates come out.

On Docker the script runs as written, with the workspace mounted at the task's workdir. On the host-path
sandboxes (subprocess, bwrap) there is no image: the Dockerfile is ignored, `tests/` is copied to a scratch
folder, and in that copy (and in the command) every literal container path is rewritten to a host path:
/tests -> <scratch>/tests, /logs/verifier -> <scratch>/logs/verifier, /logs -> <scratch>/logs, the
workdir (e.g. /app) -> the workspace. The same folders are also exported as LEAF_TESTS_DIR,
LEAF_VERIFIER_DIR and LEAF_WORKDIR for scripts that prefer variables.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from leaf_cli.errors import LeafError
from leaf_cli.tasks.envs.container_args import has_network, run_args
from leaf_cli.tasks.envs.proc import RunResult, run_process
from leaf_cli.tasks.envs.sandbox import Sandbox
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
        separate = ((task.model_extra or {}).get("harbor") or {}).get("verifier_mode") == "separate"
        if separate and spec.kind == "harbor":
            if container is None and sandbox.name != "docker":
                raise LeafError(f"{task.instance_id}: its verifier runs in a separate container of its image; "
                                "grade it with --sandbox docker")
            if container is None:
                sandbox.prepare()
            run = _run_separate(task, spec, container, scratch)
        elif container is not None and spec.kind == "harbor":
            run = _run_in_container(spec, container, scratch, network_switch(task, container))
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
    image = image_name(task)
    argv = ["docker", "run", "--rm", "-i", *run_args(task, "verifier"), "-v", f"{scratch / 'logs' / 'verifier'}:{spec.logs_dir}"]
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


def image_name(task: Task) -> str:
    image = (task.model_extra or {}).get("image_name")
    if not image:
        raise LeafError(f"{task.instance_id} names no image_name to grade in")
    return str(image)


def network_switch(task: Task, container: str) -> list[list[str]]:
    """The docker commands that give the agent's container the verifier phase's network, when the task's
    phases differ (Harbor switches the policy between agent and verifier; docker does it by network)."""
    agent, verifier = has_network(task, "agent"), has_network(task, "verifier")
    if agent == verifier:
        return []
    old, new = ("none", "bridge") if verifier else ("bridge", "none")
    return [["docker", "network", "disconnect", old, container], ["docker", "network", "connect", new, container]]


def _run_in_container(spec: RewardSpec, container: str, scratch: Path, switch: list[list[str]] = ()) -> RunResult:
    """Harbor's shared mode: the verifier phase's network, stale rewards deleted, tests/ copied into the
    agent's container, the verifier run there, the reward copied out."""
    env = dict(os.environ)
    stale = [f"{spec.logs_dir}/reward.txt", f"{spec.logs_dir}/reward.json"]
    steps = [*switch, ["docker", "exec", container, "mkdir", "-p", spec.logs_dir, spec.container_tests_dir],
             ["docker", "exec", container, "rm", "-f", *stale]]  # the agent may have written one itself
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


def separate_verifier_argv(task: Task, spec: RewardSpec, scratch: Path) -> list[str]:
    """Harbor's separate mode: a fresh container of the verifier's image with /tests, an empty
    /logs/verifier and the agent's artifacts at /logs/artifacts; the agent's workspace is not there."""
    settings = (task.model_extra or {}).get("harbor") or {}
    argv = ["docker", "run", "--rm", *run_args(task, "verifier"),
            "-v", f"{scratch / 'tests'}:{spec.container_tests_dir}:ro",
            "-v", f"{scratch / 'logs' / 'verifier'}:{spec.logs_dir}", "-v", f"{scratch / 'artifacts'}:/logs/artifacts"]
    for key, value in spec.env.items():
        argv += ["-e", f"{key}={value}"]
    return [*argv, "-w", spec.workdir, str(settings.get("verifier_image") or image_name(task)), "bash", "-c", spec.command]


def _run_separate(task: Task, spec: RewardSpec, container: str | None, scratch: Path) -> RunResult:
    env = dict(os.environ)
    (scratch / "artifacts").mkdir()
    if spec.tests_dir:
        shutil.copytree(spec.tests_dir, scratch / "tests")
    if container is not None:  # what the agent left for the verifier: /logs/artifacts and the listed paths
        settings = (task.model_extra or {}).get("harbor") or {}
        for source in ["/logs/artifacts", *(settings.get("artifacts") or [])]:
            dest = scratch / "artifacts" if source == "/logs/artifacts" else scratch / "artifacts" / Path(source).name
            run_process(["docker", "cp", f"{container}:{source}{'/.' if source == '/logs/artifacts' else ''}", str(dest)],
                        cwd=scratch, timeout=300, env=env)  # a missing artifact is simply absent, as in Harbor
    return run_process(separate_verifier_argv(task, spec, scratch), cwd=scratch, timeout=spec.timeout_s + 60, env=env)


PATCHEVAL_SCRIPT = """cd {workspace}
timeout {t} bash prepare.sh
timeout {t} bash fix-run.sh; poc=$?
echo "{poc_marker} $poc"
if [ "$poc" -eq 0 ]; then
  timeout {t} bash prepare.sh
  if ls unit_test.sh >/dev/null 2>&1; then timeout {t} bash unit_test.sh; unit=$?; else unit=none; fi
  echo "{unit_marker} $unit"
fi
"""
POC_MARKER, UNIT_MARKER = ">>>>> PatchEval PoC exit:", ">>>>> PatchEval unit tests exit:"


def patcheval_command(timeout_s: float = 600, workspace: str = "/workspace") -> str:
    """PatchEval's strict check, in one container: prepare + fix-run, then (only when the PoC is fixed)
    prepare + unit_test, each bounded as its evaluator bounds them (`timeout 600`), from `workspace`."""
    return PATCHEVAL_SCRIPT.format(t=int(timeout_s), workspace=shlex.quote(workspace), poc_marker=POC_MARKER,
                                   unit_marker=UNIT_MARKER)


def patcheval_rewards(output: str) -> dict[str, float] | None:
    """{"strict", "poc"} from the markers the command printed; None when the PoC never ran."""
    poc = re.findall(re.escape(POC_MARKER) + r" (\S+)", output)
    if not poc:
        return None
    unit = re.findall(re.escape(UNIT_MARKER) + r" (\S+)", output)
    poc_ok = poc[-1] == "0"
    unit_ok = bool(unit) and unit[-1] in ("0", "none")  # no unit_test.sh: nothing else to break
    return {"strict": float(poc_ok and unit_ok), "poc": float(poc_ok)}


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
