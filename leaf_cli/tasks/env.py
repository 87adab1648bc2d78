"""Cached test environments: one isolated venv per (repository, version, install_config), built once.

The venv holds pytest and the task's test dependencies. Attempts never install into it (it is mounted
read-only in the bwrap sandbox); the code under test comes from the attempt's workspace on PYTHONPATH, which
sys.path puts before site-packages, so even an editable install of the package cannot shadow it.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from pydantic import BaseModel

from leaf_cli.errors import LeafError
from leaf_cli.tasks.cache import cache_key, cache_root, locked
from leaf_cli.tasks.proc import run_process
from leaf_cli.tasks.source import snapshot
from leaf_cli.tasks.task import Task

BASE_PACKAGES = ["pytest>=7"]


class EnvBuildError(Exception):
    """Building an environment failed; grading labels the attempt an infrastructure failure."""


class Environment(BaseModel):
    """A built venv: `python` runs the tests, `path` is mounted read-only."""

    key: str
    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def bin(self) -> Path:
        return self.path / "bin"


def env_key(task: Task, base_dir: Path | None = None) -> str:
    """What an environment is shared by: the repository, the version and the install config."""
    return cache_key(task.repo_location(base_dir), task.version, task.install_config.model_dump(mode="json"))


def get_env(task: Task, base_dir: Path | None = None) -> Environment:
    """The task's environment, built on first use. Concurrent builders (threads or processes) wait on a lock."""
    key = env_key(task, base_dir)
    root = cache_root() / "envs" / key
    env = Environment(key=key, path=root / "venv")
    with locked(root.with_suffix(".lock")):
        if (root / "ready").exists() and env.python.exists():
            return env
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        try:
            _build(task, base_dir, env, root / "build.log")
        except BaseException:
            shutil.rmtree(env.path, ignore_errors=True)  # the log stays for the error message
            raise
        (root / "ready").write_text(task.install_config.model_dump_json() + "\n")
    return env


def find_python(version: str | None) -> str:
    """The interpreter for `install_config.python`: leaf's own when it matches, else `pythonX.Y` on PATH."""
    if not version or version == f"{sys.version_info.major}.{sys.version_info.minor}":
        return sys.executable
    found = shutil.which(f"python{version}")
    if found is None:
        raise EnvBuildError(f"python{version} is not installed (install_config.python = {version!r})")
    return found


def _build(task: Task, base_dir: Path | None, env: Environment, log: Path) -> None:
    cfg = task.install_config
    timeout = task.timeouts.build_s
    _step([find_python(cfg.python), "-m", "venv", str(env.path)], env.path.parent, timeout, log, None)
    shell_env = {"PATH": f"{env.bin}:/usr/local/bin:/usr/bin:/bin", "VIRTUAL_ENV": str(env.path),
                 "HOME": str(env.path.parent), "LANG": "C.UTF-8", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    # Kept beside the venv: an `install` such as `pip install -e .` points into it. PYTHONPATH still wins.
    checkout = env.path.parent / "src"
    setup_task = task.model_copy(update={"base_commit": task.environment_setup_commit or task.base_commit})
    shutil.copytree(snapshot(setup_task, base_dir), checkout, symlinks=True)
    for command in cfg.pre_install:
        _step(["bash", "-c", command], checkout, timeout, log, shell_env)
    reqs = [cfg.reqs_path] if isinstance(cfg.reqs_path, str) else list(cfg.reqs_path or [])
    pip = [str(env.python), "-m", "pip", "install", "-q", *BASE_PACKAGES, *cfg.pip_packages]
    for req in reqs:
        pip += ["-r", str(checkout / req)]
    _step(pip, checkout, timeout, log, shell_env)
    if cfg.install:
        _step(["bash", "-c", cfg.install], checkout, timeout, log, shell_env)


def _step(argv: list[str], cwd: Path, timeout: float, log: Path, env: dict[str, str] | None) -> None:
    result = run_process(argv, cwd=cwd, timeout=timeout, env=env)
    with log.open("a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(argv)}\n{result.stdout}{result.stderr}\n")
    if not result.ok:
        why = "timed out" if result.timed_out else f"exit {result.returncode}"
        tail = (result.stderr.strip() or result.stdout.strip())[-400:]
        raise EnvBuildError(f"environment build step {' '.join(argv[:4])} {why}: {tail} (log: {log})")
