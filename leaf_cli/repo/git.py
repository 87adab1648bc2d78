"""Running git: one helper with a timeout, a clean environment and a readable error."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Mapping

from leaf_cli.errors import LeafError

GIT_TIMEOUT = 300.0

# Variables that would make git look somewhere else than we say; dropped before every call.
_GIT_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                      "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_PREFIX")


class GitError(RuntimeError):
    """A git command failed; the message carries the command and git's stderr."""


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a git call: ours minus location overrides, plus `extra`, never a pager or prompt."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"})
    env.update(extra or {})
    return env


def git(cwd: Path, *args: str, env: Mapping[str, str] | None = None, input: bytes | None = None,
        check: bool = True, timeout: float = GIT_TIMEOUT) -> subprocess.CompletedProcess[bytes]:
    """Run `git ARGS` in `cwd` and return the finished process (bytes); raise GitError when it fails."""
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, env=git_env(env), input=input,
                              capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise LeafError("git is not installed or not on PATH; install git and try again") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {' '.join(args)} timed out after {timeout:.0f} s") from None
    if check and proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        raise GitError(f"git {' '.join(args)} failed: {detail[-1] if detail else f'exit {proc.returncode}'}")
    return proc


def out(cwd: Path, *args: str, env: Mapping[str, str] | None = None, check: bool = True) -> str:
    """stdout of `git ARGS` as text, trailing newline removed."""
    return git(cwd, *args, env=env, check=check).stdout.decode(errors="surrogateescape").rstrip("\n")


def work_tree_root(path: Path) -> Path:
    """The top of the git work tree containing `path`; LeafError when there is none."""
    if not path.is_dir():
        raise LeafError(f"{path} is not a directory")
    proc = git(path, "rev-parse", "--show-toplevel", check=False)
    top = proc.stdout.decode(errors="surrogateescape").strip()
    if proc.returncode != 0 or not top:
        raise LeafError(f"{path} is not inside a git work tree; run `git init` there first or pass --workdir")
    return Path(top).resolve()
