"""Terminal-Bench 2.0 / Harbor task folders -> leaf tasks graded by their reward, not by test lists.

A task folder holds `instruction.md` (what the agent reads), `task.toml` (timeouts, resources, network, an
optional prebuilt `[environment].docker_image`), `environment/Dockerfile` (the agent's container) and
`tests/test.sh` (the verifier, uploaded after the agent finishes; it writes /logs/verifier/reward.txt or
reward.json). `solution/solve.sh` is the optional reference solution.

task.toml is read as Harbor 0.25.0's `TaskConfig` reads it (compared field by field in
`tests/tasks/test_harbor_parity.py`): no network field means the public network (`network_mode`, or the
legacy `allow_internet`; `[agent]` / `[verifier]` may override it per phase); `[agent] timeout_sec` is the
attempt's limit; `memory = "4G"` (legacy) is 4096 MB; `[environment] workdir` overrides the Dockerfile's
WORKDIR; the verifier runs in the agent's container unless `[verifier] environment_mode = "separate"` (or a
`[verifier.environment]`) asks for a fresh one. A task leaf cannot run as Harbor would (a docker-compose
environment, a network allowlist, a Windows image) is refused with its reason; the rest of the import goes on.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leaf_cli.errors import LeafError
from leaf_cli.tasks.format.reward_spec import RewardSpec
from leaf_cli.tasks.format.task import Task

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


COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
NETWORK_MODES = ("public", "no-network", "allowlist")


@dataclass
class HarborImport:
    """The tasks of a Harbor dataset, and the folders refused with why (one bad task stops nothing)."""

    tasks: list[Task] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


def harbor_import(root: Path) -> HarborImport:
    """Every Harbor task under `root`, each refused task named with its reason."""
    result = HarborImport()
    for folder in find_task_dirs(root):
        try:
            result.tasks.append(harbor_task(folder))
        except LeafError as exc:
            result.refused[str(folder)] = str(exc)
    if not result.tasks:
        raise LeafError(f"no Harbor task under {root} can run here: " + "; ".join(result.refused.values()))
    return result


def import_harbor(root: Path) -> list[Task]:
    """The runnable Harbor tasks under `root` (see `harbor_import` for the refused ones)."""
    return harbor_import(root).tasks


def harbor_task(folder: Path) -> Task:
    """One task folder -> a Task; a missing file or a task leaf cannot run is a LeafError saying why."""
    folder = folder.resolve()
    for required in ("instruction.md", "task.toml", "tests/test.sh"):
        if not (folder / required).is_file():
            raise LeafError(f"{folder}: missing {required} (a Harbor task needs instruction.md, task.toml, tests/test.sh)")
    try:
        config = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise LeafError(f"{folder / 'task.toml'}: not valid TOML ({exc})") from None
    environment: dict[str, Any] = config.get("environment", {})
    verifier, agent = config.get("verifier", {}), config.get("agent", {})
    env_dir = folder / "environment"
    compose = [name for name in COMPOSE_FILES if (env_dir / name).is_file()]
    if compose:
        raise LeafError(f"{folder.name}: a docker-compose environment ({compose[0]}) needs compose orchestration, "
                        "which leaf does not run; refused")
    if str(environment.get("os", "linux")).lower() != "linux":
        raise LeafError(f"{folder.name}: a {environment['os']} image; leaf runs Linux containers only; refused")
    dockerfile = env_dir / "Dockerfile"
    if not environment.get("docker_image") and not dockerfile.is_file():
        raise LeafError(f"{folder}: needs environment/Dockerfile or [environment].docker_image in task.toml")
    network = phase_networks(config, folder.name)
    workdir = str(environment.get("workdir") or (dockerfile_workdir(dockerfile) if dockerfile.is_file() else DEFAULT_WORKDIR))
    name = str(config.get("task", {}).get("name") or folder.name)
    spec = RewardSpec(kind="harbor", command="bash /tests/test.sh", tests_dir=str(folder / "tests"),
                      workdir=workdir, timeout_s=float(verifier.get("timeout_sec", 600.0)),
                      env={str(k): str(v) for k, v in verifier.get("env", {}).items()})
    solution = folder / "solution" / "solve.sh"
    image = environment.get("docker_image") or local_image_tag(folder)
    separate = verifier_mode(verifier) == "separate"
    verifier_env = verifier.get("environment") or {}
    return Task.model_validate({
        "instance_id": folder.name, "repo": "", "base_commit": "", "patch": "", "FAIL_TO_PASS": [],
        "problem_statement": (folder / "instruction.md").read_text(encoding="utf-8"),
        "image_name": image, "workdir": workdir, "eval_type": "reward", "reward": spec.model_dump(),
        "harbor": {"task_dir": str(folder), "name": name,
                   "environment_dir": str(env_dir) if dockerfile.is_file() else None,
                   "solution": str(solution) if solution.is_file() else None,
                   "network": network, "allow_internet": network["agent"] == "public",
                   "cpus": environment.get("cpus"), "memory_mb": memory_mb(environment, folder.name),
                   "verifier_mode": "separate" if separate else "shared",
                   "verifier_image": str(verifier_env.get("docker_image") or image) if separate else None,
                   "artifacts": [a if isinstance(a, str) else a.get("source") for a in config.get("artifacts", [])]},
        "timeouts": {"agent_s": float(agent.get("timeout_sec") or 1800.0), "test_s": spec.timeout_s,
                     "build_s": float(environment.get("build_timeout_sec", 600.0))},
        "source": {"kind": "harbor", "upstream_id": name, "metadata": config.get("metadata", {})},
        "protected_paths": [],
    })


def phase_networks(config: dict[str, Any], name: str) -> dict[str, str]:
    """The network each phase gets: `[agent]` / `[verifier]` `network_mode` when set, else the environment's
    (`network_mode`, else the legacy `allow_internet`, else public: Harbor's default)."""
    environment = config.get("environment", {})
    baseline = environment.get("network_mode")
    if baseline is None and environment.get("allow_internet") is not None:
        baseline = "public" if environment["allow_internet"] else "no-network"
    modes = {"agent": config.get("agent", {}).get("network_mode") or baseline or "public",
             "verifier": config.get("verifier", {}).get("network_mode") or baseline or "public"}
    for phase, mode in modes.items():
        if mode not in NETWORK_MODES:
            raise LeafError(f"{name}: unknown network_mode {mode!r}; Harbor's are {', '.join(NETWORK_MODES)}")
        if mode == "allowlist":
            raise LeafError(f"{name}: the {phase} phase has a host allowlist, which leaf cannot enforce; refused")
    return modes


def memory_mb(environment: dict[str, Any], name: str) -> int | None:
    """`memory_mb`, or the legacy `memory = "4G"` / `"512M"` / `"2048K"` in MB (G is 1024 MB)."""
    legacy = environment.get("memory")
    if not isinstance(legacy, str):
        return environment.get("memory_mb")
    size = legacy.strip().upper()
    units = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}
    if not size or size[-1] not in units:
        raise LeafError(f"{name}: memory {legacy!r} is not a size like '4G' or '512M'")
    try:
        mb = int(float(size[:-1]) * units[size[-1]])
    except ValueError:
        raise LeafError(f"{name}: memory {legacy!r} is not a size like '4G' or '512M'") from None
    if environment.get("memory_mb") not in (None, mb):
        raise LeafError(f"{name}: memory {legacy!r} ({mb} MB) and memory_mb {environment['memory_mb']} disagree")
    return mb


def verifier_mode(verifier: dict[str, Any]) -> str:
    """`environment_mode` when given; otherwise separate when a verifier environment is defined, else shared."""
    mode = verifier.get("environment_mode") or ("separate" if verifier.get("environment") else "shared")
    if mode not in ("shared", "separate"):
        raise LeafError(f"unknown [verifier] environment_mode {mode!r}; Harbor's are shared, separate")
    return mode


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
