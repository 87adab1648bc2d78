"""The bubblewrap command line leaf runs untrusted commands under (the agent's Bash, graded tests).

One builder for both users: the agent's sandbox (leaf_cli/agent/sandbox.py) and the eval sandbox
(leaf_cli/tasks/sandbox.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

PRIVATE_TMP = Path("/tmp")


def bwrap_argv(exe: str, *, cwd: Path, writable: Sequence[Path], readonly: Sequence[Path] = (),
               network: bool = False, tmp_dir: Path | None = None, protect: Sequence[Path] = (),
               hidden: Sequence[Path] = (), home: Sequence[str] = ()) -> list[str]:
    """`exe` (bwrap) with: the root file system read-only, a private /tmp, its own pid and ipc namespaces,
    no network unless asked, `writable` and `readonly` bound over that, and `cwd` as the working folder.

    `tmp_dir` is bound as /tmp (one private /tmp that lasts across commands) instead of a fresh tmpfs;
    `protect` paths are bound read-only *over* the writable ones (a repository's `.git/config`, hooks);
    `hidden` paths are covered last: a folder by an empty tmpfs, a file by /dev/null. `home` are the bwrap
    arguments that mount the private home (agent/sandbox_home.py), before everything bound into it.

    The running interpreter (and its venv) is bound back when it lives under /tmp: environments are venvs
    whose `python` links to it, and the private /tmp would hide it.
    """
    tmp = ["--bind", str(tmp_dir), str(PRIVATE_TMP)] if tmp_dir is not None else ["--tmpfs", str(PRIVATE_TMP)]
    cmd = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *tmp,
           "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
    if not network:
        cmd.append("--unshare-net")
    cmd += home
    for path in [*_interpreter_under_tmp(), *readonly]:  # after --tmpfs: bound over the empty /tmp
        cmd += ["--ro-bind", str(path), str(path)]
    for path in writable:
        cmd += ["--bind", str(path), str(path)]
    for path in protect:
        cmd += ["--ro-bind", str(path), str(path)]
    for path in hidden:
        cmd += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    return [*cmd, "--chdir", str(cwd), "--"]


def _interpreter_under_tmp() -> list[Path]:
    prefixes = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    return sorted(p for p in prefixes if p.is_relative_to(PRIVATE_TMP))
