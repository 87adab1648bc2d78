"""Where a verifier script runs (Harbor / Terminal-Bench 2.0, PatchEval): the four `docker` variants and the
host one. The graders (grading/harbor.py, grading/patcheval.py) pick one; each returns the script's run.

- `run_in_image`: a fresh `docker run` of the task's image, the workspace mounted at its workdir (Harbor on
  the docker sandbox) or the patch at its `patch_path` (PatchEval);
- `run_in_container`: `docker exec` in the agent's live container (Harbor's shared mode), after the
  verifier phase's network (`network_switch`), stale rewards deleted and tests/ copied in;
- `run_separate`: a fresh container of the verifier's image with only the agent's artifacts (Harbor's
  separate mode, `separate_verifier_argv`);
- `run_on_host`: the host-path sandboxes, the script's container paths rewritten (path_rewrite.py) and also
  exported as LEAF_TESTS_DIR, LEAF_VERIFIER_DIR and LEAF_WORKDIR for scripts that prefer variables.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.tasks.envs.container_args import has_network, run_args
from leaf_cli.tasks.envs.path_rewrite import copy_rewritten, host_mapping, rewrite
from leaf_cli.tasks.envs.proc import RunResult, run_process
from leaf_cli.tasks.envs.sandbox import Sandbox
from leaf_cli.tasks.format.reward_spec import RewardSpec
from leaf_cli.tasks.format.task import Task


def run_on_host(task: Task, spec: RewardSpec, sandbox: Sandbox, scratch: Path, workspace: Path | None) -> RunResult:
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


def run_in_image(task: Task, spec: RewardSpec, sandbox: Sandbox, scratch: Path, workspace: Path | None,
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


def run_in_container(spec: RewardSpec, container: str, scratch: Path, switch: list[list[str]] = ()) -> RunResult:
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


def run_separate(task: Task, spec: RewardSpec, container: str | None, scratch: Path) -> RunResult:
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
