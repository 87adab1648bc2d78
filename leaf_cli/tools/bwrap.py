"""The bubblewrap command line leaf runs untrusted commands under (the agent's Bash, graded tests).

One builder for both users: the agent's sandbox (leaf_cli/agent/sandbox.py) and the eval sandbox
(leaf_cli/tasks/envs/sandbox.py).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

PRIVATE_TMP = Path("/tmp")
RUN_DIRS = (Path("/run"), Path("/var/run"))
"""Where the host's service sockets live (docker, D-Bus, systemd, and /run/user/UID's ssh and gpg agents)."""
_LISTENING = 0x10000  # __SO_ACCEPTCON in /proc/net/unix's Flags: a socket that accepts connections


def bwrap_argv(exe: str, *, cwd: Path, writable: Sequence[Path], readonly: Sequence[Path] = (),
               network: bool = False, tmp_dir: Path | None = None, protect: Sequence[Path] = (),
               hidden: Sequence[Path] = (), home: Sequence[str] = ()) -> list[str]:
    """`exe` (bwrap) with: the root file system read-only, a private /tmp, its own pid and ipc namespaces,
    no network unless asked, `writable` and `readonly` bound over that, and `cwd` as the working folder.

    `tmp_dir` is bound as /tmp (one private /tmp that lasts across commands) instead of a fresh tmpfs;
    `protect` paths are bound read-only *over* the writable ones (a repository's `.git/config`, hooks);
    `hidden` paths are covered last: a folder by an empty tmpfs, a file by /dev/null. `home` are the bwrap
    arguments that mount the private home (agent/sandbox_home.py), before everything bound into it.
    The host's sockets are out of reach (`host_socket_cover`): a read-only bind does not stop `connect`.
    They are listed as this argv is built, so build it anew for each bwrap started (`lost_cover`).

    The running interpreter (and its venv) is bound back when it lives under /tmp: environments are venvs
    whose `python` links to it, and the private /tmp would hide it.
    """
    tmp = ["--bind", str(tmp_dir), str(PRIVATE_TMP)] if tmp_dir is not None else ["--tmpfs", str(PRIVATE_TMP)]
    cmd = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *tmp,
           "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session",
           *host_socket_cover([*writable, *readonly], network)]
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


def host_socket_cover(keep: Sequence[Path], network: bool) -> list[str]:
    """bwrap arguments that leave no socket of the host reachable by path: /run (and /var/run where it is
    a folder of its own) become empty tmpfs, and every other listening socket the host has bound, as
    /proc/net/unix lists them, is covered by /dev/null (connect then says refused). Sockets under `keep`
    (the work tree and what the command is given) are the sandbox's own and stay. With the network on,
    /etc/resolv.conf's target under /run is bound back, or names would not resolve."""
    args: list[str] = []
    for run in RUN_DIRS:
        if run.is_dir() and not run.is_symlink() and not any(k.is_relative_to(run) for k in keep):
            args += ["--tmpfs", str(run)]
    resolv = Path("/etc/resolv.conf").resolve()
    if network and resolv.is_file() and any(resolv.is_relative_to(r.resolve()) for r in RUN_DIRS):
        args += ["--ro-bind", str(resolv), str(resolv)]
    for path in listening_sockets():
        if not any(path.is_relative_to(p) for p in (PRIVATE_TMP, *RUN_DIRS, *keep)):
            args += ["--ro-bind", "/dev/null", str(path)]
    return args


def lost_cover(argv: Sequence[str], error: str) -> bool:
    """Whether bwrap `argv` failed (`error`: its stderr line) on one of its /dev/null covers. bwrap cannot
    mount on a missing path (the root is read-only, so it cannot make the file: "Can't create file at
    PATH"), which is what a socket listed for `argv` and dropped before bwrap's mounts leads to."""
    return any(path in error for _, path in _covers(argv))


def without_vanished(argv: Sequence[str]) -> list[str]:
    """`argv` less its /dev/null covers of paths that are gone now (there is nothing left to hide), every
    other cover of the same listing kept: the start after `lost_cover`. A fresh listing instead would bring
    in the sockets bound since, and under churn some of those are dropped before bwrap's mounts again."""
    gone = {i for i, path in _covers(argv) if not os.path.lexists(path)}
    return [arg for i, arg in enumerate(argv) if not any(i - g in (0, 1, 2) for g in gone)]


COVER_TRIES = 5
"""Starts of one bwrap while the last failed because a socket it was to cover was dropped between the listing
and bwrap's mounts (another process's server ending): each leaves out the covers of paths gone by then, so
only a socket of the same listing dropped during the next start fails that one."""


def retry_lost_covers(argv: list[str], start: Callable[[list[str]], tuple[T, str | None]]) -> T:
    """`start(argv)` returns (its result, bwrap's error line, or None when bwrap did not fail); while that line
    names one of `argv`'s covers (`lost_cover`), start again `without_vanished`, at most `COVER_TRIES` times.
    The last start's result."""
    for _ in range(COVER_TRIES):
        result, error = start(argv)
        if error is None or not lost_cover(argv, error):
            break  # started, or not the listing's race: another start would fail the same way
        argv = without_vanished(argv)
    return result


def _covers(argv: Sequence[str]) -> list[tuple[int, str]]:
    """(index of `--ro-bind`, path) of each `--ro-bind /dev/null PATH` among bwrap's options (before `--`)."""
    options = argv[:list(argv).index("--")] if "--" in argv else argv
    return [(i, options[i + 2]) for i in range(len(options) - 2)
            if options[i] == "--ro-bind" and options[i + 1] == "/dev/null"]


def listening_sockets() -> list[Path]:
    """Absolute paths of the unix sockets that accept connections in this network namespace, as found now."""
    try:
        lines = Path("/proc/net/unix").read_text(errors="replace").splitlines()[1:]
    except OSError:
        return []
    found = set()
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8 and int(fields[3], 16) & _LISTENING and fields[7].startswith("/"):
            found.add(Path(fields[7]))
    return sorted(p for p in found if _is_socket(p))


def _is_socket(path: Path) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False
