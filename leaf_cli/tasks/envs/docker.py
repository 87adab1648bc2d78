"""The Docker backend: the task's `image_name`, or an image built from its `install_config` (`dockerfile`,
which exporters/harbor.py also writes out) or from a Harbor task's environment/ (`build_harbor_image`).

Host folders (workspace, report folder) are bind-mounted at the same paths, so grading code is the same
as for the host backends; tests run with the image's own `python`, where the environment was installed.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import tempfile
from pathlib import Path

from leaf_cli.errors import InfraError, LeafError
from leaf_cli.tasks.envs.proc import run_process
from leaf_cli.tasks.envs.sandbox import HostPathSandbox
from leaf_cli.tasks.format.task import Task


class DockerSandbox(HostPathSandbox):
    """`docker run --rm --network none` in the task's image, host paths bind-mounted at the same place."""

    name = "docker"
    isolates_network = True

    def __init__(self, image: str | None = None) -> None:
        self.image = image

    def prepare(self) -> None:
        if shutil.which("docker") is None:
            raise LeafError("the docker sandbox needs the docker CLI on PATH; install Docker or use --sandbox bwrap")
        probe = run_process(["docker", "version", "--format", "{{.Server.Version}}"], cwd=Path.cwd(), timeout=20)
        if not probe.ok:
            detail = (probe.stderr.strip().splitlines() or ["no answer"])[-1]
            raise LeafError(f"the docker sandbox needs a running Docker daemon ({detail}); "
                            "start dockerd or use --sandbox bwrap")

    def for_task(self, task: Task) -> "DockerSandbox":
        image = (task.model_extra or {}).get("image_name") or (task.model_extra or {}).get("docker_image")
        return DockerSandbox(str(image) if image else build_image(task))

    def python(self, env_python: Path) -> str:
        return "python"

    def wrap(self, argv: list[str], *, cwd: Path, writable: list[Path], readonly: list[Path] = (),
             network: bool = False, tmp: Path | None = None) -> list[str]:
        if self.image is None:
            raise LeafError("the docker sandbox has no image: call for_task(task) first")
        cmd = ["docker", "run", "--rm", "-i", "--user", f"{os.getuid()}:{os.getgid()}", "-e", "HOME=/tmp"]
        if not network:
            cmd += ["--network", "none"]
        if tmp is not None:  # each `docker run` is a new container: the attempt's folder is its one /tmp
            cmd += ["-v", f"{tmp}:/tmp"]
        for path in {*writable, cwd}:
            cmd += ["-v", f"{path}:{path}"]
        for path in readonly:
            cmd += ["-v", f"{path}:{path}:ro"]
        return [*cmd, "-w", str(cwd), self.image, *argv]


def dockerfile(task: Task, *, with_source: bool = True) -> str:
    """A Dockerfile for the task's environment; with the source copied to /testbed when `with_source`."""
    cfg = task.install_config
    lines = [f"FROM python:{cfg.python or '3.11'}-slim",
             "RUN apt-get update && apt-get install -y --no-install-recommends git patch && rm -rf /var/lib/apt/lists/*",
             "WORKDIR /testbed"]
    packages = " ".join(shlex.quote(p) for p in ["pytest>=7", *cfg.pip_packages])
    lines.append(f"RUN pip install --no-cache-dir {packages}")
    if with_source:
        lines.append("COPY testbed/ /testbed/")
        lines += [f"RUN {cmd}" for cmd in cfg.pre_install]
        reqs = [cfg.reqs_path] if isinstance(cfg.reqs_path, str) else list(cfg.reqs_path or [])
        lines += [f"RUN pip install --no-cache-dir -r {shlex.quote(r)}" for r in reqs]
        if cfg.install:
            lines.append(f"RUN {cfg.install}")
        lines.append("RUN git init -q && git add -A && git -c user.name=leaf -c user.email=leaf@localhost commit -qm start")
    lines.append("ENV PYTHONPATH=/testbed/src:/testbed PYTHONDONTWRITEBYTECODE=1")
    return "\n".join(lines) + "\n"


def build_image(task: Task) -> str:
    """Build (once; Docker caches it by tag) the image described by the task's install_config."""
    text = dockerfile(task, with_source=False)
    tag = "leaf-env:" + hashlib.sha256(text.encode()).hexdigest()[:16]
    if run_process(["docker", "image", "inspect", tag], cwd=Path.cwd(), timeout=60).ok:
        return tag
    with tempfile.TemporaryDirectory(prefix="leaf-docker-") as tmp:
        (Path(tmp) / "Dockerfile").write_text(text, encoding="utf-8")
        built = run_process(["docker", "build", "-t", tag, tmp], cwd=Path(tmp), timeout=task.timeouts.build_s)
    if not built.ok:
        raise InfraError(f"docker build for {task.instance_id} failed: {built.stderr.strip()[-500:]}", "docker")
    return tag


def build_harbor_image(task: Task) -> str:
    """Build the task's image from environment/ unless Docker already has it. Needs a Docker daemon."""
    DockerSandbox().prepare()
    extra = task.model_extra or {}
    image, env_dir = str(extra["image_name"]), (extra.get("harbor") or {}).get("environment_dir")
    if run_process(["docker", "image", "inspect", image], cwd=Path.cwd(), timeout=60).ok or env_dir is None:
        return image
    built = run_process(["docker", "build", "-t", image, env_dir], cwd=Path(env_dir), timeout=task.timeouts.build_s)
    if not built.ok:
        raise LeafError(f"docker build for {task.instance_id} failed: {built.stderr.strip()[-500:]}")
    return image
