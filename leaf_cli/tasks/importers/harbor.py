"""Terminal-Bench 2.0 / Harbor task folders -> leaf tasks graded by their reward, not by test lists.

A task folder holds `instruction.md` (what the agent reads), `task.toml` (timeouts, resources, an optional
prebuilt `[environment].docker_image`), `environment/Dockerfile` (the agent's container) and
`tests/test.sh` (the verifier, uploaded after the agent finishes; it writes /logs/verifier/reward.txt or
reward.json). `solution/solve.sh` is the optional reference solution.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path
from typing import Any

from leaf_cli.errors import LeafError
from leaf_cli.tasks.proc import run_process
from leaf_cli.tasks.reward import RewardSpec
from leaf_cli.tasks.task import Task

DEFAULT_WORKDIR = "/app"
"""Terminal-Bench images work in /app when their Dockerfile sets no WORKDIR."""


def find_task_dirs(root: Path) -> list[Path]:
    """`root` itself when it is a task folder, else every task folder below it (sorted)."""
    root = Path(root)
    if not root.is_dir():
        raise LeafError(f"Harbor task folder not found: {root}")
    if (root / "task.toml").is_file():
        return [root]
    found = sorted(p.parent for p in root.rglob("task.toml"))
    if not found:
        raise LeafError(f"no task.toml under {root}: not a Harbor task folder or dataset")
    return found


def import_harbor(root: Path) -> list[Task]:
    """Every Harbor task under `root` as a leaf task."""
    return [harbor_task(d) for d in find_task_dirs(root)]


def harbor_task(folder: Path) -> Task:
    """One task folder -> a Task; a missing required file is a LeafError naming it."""
    folder = folder.resolve()
    for required in ("instruction.md", "task.toml", "tests/test.sh"):
        if not (folder / required).is_file():
            raise LeafError(f"{folder}: missing {required} (a Harbor task needs instruction.md, task.toml, tests/test.sh)")
    try:
        config = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise LeafError(f"{folder / 'task.toml'}: not valid TOML ({exc})") from None
    environment: dict[str, Any] = config.get("environment", {})
    dockerfile = folder / "environment" / "Dockerfile"
    if not environment.get("docker_image") and not dockerfile.is_file():
        raise LeafError(f"{folder}: needs environment/Dockerfile or [environment].docker_image in task.toml")
    workdir = dockerfile_workdir(dockerfile) if dockerfile.is_file() else DEFAULT_WORKDIR
    verifier, agent = config.get("verifier", {}), config.get("agent", {})
    name = str(config.get("task", {}).get("name") or folder.name)
    spec = RewardSpec(kind="harbor", command="bash /tests/test.sh", tests_dir=str(folder / "tests"),
                      workdir=workdir, timeout_s=float(verifier.get("timeout_sec", 600.0)),
                      env={str(k): str(v) for k, v in verifier.get("env", {}).items()})
    solution = folder / "solution" / "solve.sh"
    return Task.model_validate({
        "instance_id": folder.name, "repo": "", "base_commit": "", "patch": "", "FAIL_TO_PASS": [],
        "problem_statement": (folder / "instruction.md").read_text(encoding="utf-8"),
        "image_name": environment.get("docker_image") or local_image_tag(folder),
        "workdir": workdir, "eval_type": "reward", "reward": spec.model_dump(),
        "harbor": {"task_dir": str(folder), "name": name,
                   "environment_dir": str(folder / "environment") if dockerfile.is_file() else None,
                   "solution": str(solution) if solution.is_file() else None,
                   "allow_internet": bool(environment.get("allow_internet", False)),
                   "cpus": environment.get("cpus"), "memory_mb": environment.get("memory_mb")},
        "timeouts": {"agent_s": float(agent.get("timeout_sec", 1800.0)), "test_s": spec.timeout_s,
                     "build_s": float(environment.get("build_timeout_sec", 1800.0))},
        "source": {"kind": "harbor", "upstream_id": name, "metadata": config.get("metadata", {})},
        "protected_paths": [],
    })


def dockerfile_workdir(dockerfile: Path) -> str:
    """The last absolute WORKDIR the Dockerfile sets (the agent's starting folder), else /app."""
    workdir = DEFAULT_WORKDIR
    for line in dockerfile.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\s*WORKDIR\s+(\S+)", line, re.IGNORECASE)
        if match and match.group(1).startswith("/"):
            workdir = match.group(1).strip("\"'")
    return workdir


def local_image_tag(folder: Path) -> str:
    """A tag for the image built from the task's environment/: named after the task, keyed by its files."""
    digest = hashlib.sha256()
    env_dir = folder / "environment"
    for path in sorted(p for p in env_dir.rglob("*") if p.is_file()):
        digest.update(path.relative_to(env_dir).as_posix().encode() + b"\0" + path.read_bytes())
    slug = re.sub(r"[^a-z0-9_.-]+", "-", folder.name.lower()).strip("-.") or "task"
    return f"leaf-harbor/{slug}:{digest.hexdigest()[:12]}"


def ensure_image(task: Task) -> str:
    """Build the task's image from environment/ unless Docker already has it. Needs a Docker daemon."""
    from leaf_cli.tasks.docker import DockerSandbox

    DockerSandbox().prepare()
    extra = task.model_extra or {}
    image, env_dir = str(extra["image_name"]), (extra.get("harbor") or {}).get("environment_dir")
    if run_process(["docker", "image", "inspect", image], cwd=Path.cwd(), timeout=60).ok or env_dir is None:
        return image
    built = run_process(["docker", "build", "-t", image, env_dir], cwd=Path(env_dir), timeout=task.timeouts.build_s)
    if not built.ok:
        raise LeafError(f"docker build for {task.instance_id} failed: {built.stderr.strip()[-500:]}")
    return image
