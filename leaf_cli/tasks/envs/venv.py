"""Cached test environments: one isolated venv per (repository, version, install_config), built once.

The venv holds pytest and the task's test dependencies. Attempts never install into it (it is mounted
read-only in the bwrap sandbox); the code under test comes from the attempt's workspace on PYTHONPATH, which
sys.path puts before site-packages, so even an editable install of the package cannot shadow it.

A build runs the task's own commands (`install_config.pre_install`, `install`, and whatever pip runs of the
snapshot: a `setup.py`): with the bwrap sandbox, every step runs inside it, as the attempt does, able to
write only the environment's own folder (the venv, the checkout, its HOME). It keeps the network, which
pip needs for the task's dependencies; the host's sockets stay out of reach (tools/bwrap.py).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Callable

from pydantic import BaseModel

from leaf_cli.errors import LeafError
from leaf_cli.tasks.envs.cache import cache_key, cache_root, locked
from leaf_cli.tasks.envs.proc import run_process
from leaf_cli.tasks.envs.sandbox import BwrapSandbox, Sandbox
from leaf_cli.tasks.envs.source import snapshot
from leaf_cli.tasks.format.task import Task

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


def get_env(task: Task, base_dir: Path | None = None, sandbox: Sandbox | None = None) -> Environment:
    """The task's environment, built on first use (its steps inside `sandbox` when that is bwrap).
    Concurrent builders (threads or processes) wait on a lock."""
    key = env_key(task, base_dir)
    root = cache_root() / "envs" / key
    env = Environment(key=key, path=root / "venv")
    with locked(root.with_suffix(".lock")):
        if (root / "ready").exists() and env.python.exists():
            return env
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        try:
            _build(task, base_dir, env, root / "build.log", _confine(sandbox, root))
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


Confine = Callable[[list[str], Path], list[str]]
"""The argv that runs a build step (argv, folder) where it may write only the environment's folder."""


def _confine(sandbox: Sandbox | None, root: Path) -> Confine:
    if not isinstance(sandbox, BwrapSandbox):
        return lambda argv, _cwd: list(argv)  # no sandbox asked (or Docker, whose images bring their own)
    return lambda argv, cwd: sandbox.wrap(argv, cwd=cwd, writable=[root], network=True)


def _build(task: Task, base_dir: Path | None, env: Environment, log: Path, confine: Confine) -> None:
    cfg = task.install_config
    timeout = task.timeouts.build_s

    def step(argv: list[str], cwd: Path, shell_env: dict[str, str] | None) -> None:
        _step(argv, confine(argv, cwd), cwd, timeout, log, shell_env)

    step([find_python(cfg.python), "-m", "venv", str(env.path)], env.path.parent, None)
    shell_env = {"PATH": f"{env.bin}:/usr/local/bin:/usr/bin:/bin", "VIRTUAL_ENV": str(env.path),
                 "HOME": str(env.path.parent), "LANG": "C.UTF-8", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    # Kept beside the venv: an `install` such as `pip install -e .` points into it. PYTHONPATH still wins.
    checkout = env.path.parent / "src"
    setup_task = task.model_copy(update={"base_commit": task.environment_setup_commit or task.base_commit})
    shutil.copytree(snapshot(setup_task, base_dir), checkout, symlinks=True)
    for command in cfg.pre_install:
        step(["bash", "-c", command], checkout, shell_env)
    reqs = [cfg.reqs_path] if isinstance(cfg.reqs_path, str) else list(cfg.reqs_path or [])
    pip = [str(env.python), "-m", "pip", "install", "-q", *BASE_PACKAGES, *cfg.pip_packages]
    for req in reqs:
        pip += ["-r", str(checkout / req)]
    step(pip, checkout, shell_env)
    if cfg.install:
        step(["bash", "-c", cfg.install], checkout, shell_env)


def _step(argv: list[str], run: list[str], cwd: Path, timeout: float, log: Path, env: dict[str, str] | None) -> None:
    """Run `run` (`argv`, confined); log it under `argv`'s name; EnvBuildError when it fails."""
    result = run_process(run, cwd=cwd, timeout=timeout, env=env)
    with log.open("a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(argv)}\n{result.stdout}{result.stderr}\n")
    if not result.ok:
        why = "timed out" if result.timed_out else f"exit {result.returncode}"
        tail = (result.stderr.strip() or result.stdout.strip())[-400:]
        raise EnvBuildError(f"environment build step {' '.join(argv[:4])} {why}: {tail} (log: {log})")
