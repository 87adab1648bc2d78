"""Running git: one helper with a timeout, a clean environment and a readable error.

Every git call leaf makes goes through `git()`, and the repository is assumed hostile: the agent may have
planted a `core.fsmonitor`, hooks, filters, textconv drivers, an external diff or includes. So the call gets
a clean environment (no inherited GIT_* variable, no system or global config) and command-line overrides,
which win over any config file, for every key that would make git run a program. Calls that read or write
file contents (the checkpoint, the restore, the diff) go further and use the store as their git dir, so the
repository's own config, attributes and hooks are not read at all (see checkpoint.tree_env).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Mapping

from leaf_cli.errors import LeafError

GIT_TIMEOUT = 300.0

# The only variables of leaf's own environment a git call inherits.
_KEEP_ENV = ("PATH", "HOME", "TMPDIR", "SYSTEMROOT", "USERPROFILE", "XDG_CONFIG_HOME")

# Overrides for every configuration key that would run a program (or reach the network) inside leaf's own
# git calls. Command-line `-c` has the highest precedence, above the repository's config and its includes.
SAFE_CONFIG = (
    "core.fsmonitor=false", "core.hooksPath=/dev/null", "core.untrackedCache=false", "core.pager=cat",
    "core.editor=false", "sequence.editor=false", "core.sshCommand=false", "core.askPass=", "credential.helper=",
    "commit.gpgSign=false", "tag.gpgSign=false", "gc.auto=0", "maintenance.auto=false", "protocol.allow=never",
    "core.alternateRefsCommand=", "uploadpack.packObjectsHook=", "fetch.recurseSubmodules=false",
    "submodule.recurse=false", "core.preloadIndex=false",
)


class GitError(LeafError):
    """A git command failed; the message carries the command and git's stderr (one line for the user)."""


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a git call: a few of ours, no config outside the repository, plus `extra`."""
    env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0",
                "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_ATTR_NOSYSTEM": "1",
                "GIT_NO_REPLACE_OBJECTS": "1", "GIT_GRAFT_FILE": os.devnull, "GIT_NO_LAZY_FETCH": "1", "GIT_ASKPASS": "", "SSH_ASKPASS": ""})
    env.update(extra or {})
    return env


def git_argv(*args: str) -> list[str]:
    """`git` with the safe overrides, then `args`."""
    argv = ["git"]
    for pair in SAFE_CONFIG:
        argv += ["-c", pair]
    return [*argv, *args]


def git(cwd: Path, *args: str, env: Mapping[str, str] | None = None, input: bytes | None = None,
        check: bool = True, timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run `git ARGS` in `cwd` and return the finished process (bytes); raise GitError when it fails.

    A git that runs past `timeout` (GIT_TIMEOUT) is killed with its process group, and the index lock it
    was holding is removed: a killed git cannot remove it itself, and every later call would fail on it.
    """
    limit = GIT_TIMEOUT if timeout is None else timeout
    lock = Path(env["GIT_INDEX_FILE"] + ".lock") if env and env.get("GIT_INDEX_FILE") else None
    lock_was_there = lock is not None and lock.exists()
    try:
        proc = subprocess.Popen(git_argv(*args), cwd=cwd, env=git_env(env), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except FileNotFoundError:
        raise LeafError("git is not installed or not on PATH; install git and try again") from None
    try:
        stdout, stderr = proc.communicate(input, timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        if lock is not None and not lock_was_there:
            lock.unlink(missing_ok=True)
        raise GitError(f"git {args[0] if args else ''} timed out after {limit:.0f} s (is a file in the work tree "
                       "very large?)") from None
    except BaseException:
        _kill_group(proc)
        raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    if check and done.returncode != 0:
        detail = stderr.decode(errors="replace").strip().splitlines()
        raise GitError(f"git {' '.join(args)[:200]} failed: {detail[-1] if detail else f'exit {done.returncode}'}")
    return done


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.communicate()


def out(cwd: Path, *args: str, env: Mapping[str, str] | None = None, check: bool = True) -> str:
    """stdout of `git ARGS` as text, trailing newline removed."""
    return git(cwd, *args, env=env, check=check).stdout.decode(errors="surrogateescape").rstrip("\n")


def user_identity(top: Path) -> dict[str, str]:
    """The user's name and email for a commit leaf makes, as GIT_AUTHOR_*/GIT_COMMITTER_* variables.

    Read with the user's own global config (leaf's other calls ignore it) but without includes: reading a
    value runs nothing. Empty when unset, and git then says so.
    """
    ident: dict[str, str] = {}
    for key, names in (("user.name", ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME")),
                       ("user.email", ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"))):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        proc = subprocess.run(["git", "config", "--no-includes", "--get", key], cwd=top, env=env,
                              capture_output=True, timeout=30, check=False)
        value = proc.stdout.decode(errors="replace").strip()
        for name in names:
            ident[name] = os.environ.get(name) or value
    return {k: v for k, v in ident.items() if v}


def work_tree_root(path: Path) -> Path:
    """The top of the git work tree containing `path`; LeafError when there is none."""
    if not path.is_dir():
        raise LeafError(f"{path} is not a directory")
    proc = git(path, "rev-parse", "--show-toplevel", check=False)
    top = os.fsdecode(proc.stdout.removesuffix(b"\n"))  # only git's newline: a path may end in one
    if proc.returncode != 0 or not top:
        raise LeafError(f"{path} is not inside a git work tree; run `git init` there first or pass --workdir")
    return Path(top).resolve()
