"""The sandbox does not change what a command prints: Bash's `bash -lc` starts as it does without it.

On a pyenv user's machine the login startup runs `pyenv init`, whose `pyenv rehash` writes the shims folder;
with the home read-only every observation carried `pyenv: cannot rehash: …/shims isn't writable`. Here a real
login shell runs under the real sandbox on a home prepared like a pyenv user's (the machine's own pyenv,
copied, where it has one; else a stand-in that makes the same writability check), with a login script that
also writes under the home, and `echo hi` must give exactly the harness's observation.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from leaf_cli.tools import texts
from tests.cli.fixcli import call, leaf_process, script, turn

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")
HI = texts.bash_layout(texts.exit_code(0), "hi\n", "")  # Exit code: 0\nSTDOUT:\nhi\n\nSTDERR:\n
PROFILE = """export PYENV_ROOT="$HOME/.pyenv"
export PATH="$PYENV_ROOT/bin:$PATH"
eval "$(pyenv init -)"
mkdir -p "$HOME/.cache/login" && echo stamp >> "$HOME/.cache/login/stamps"
"""
STAND_IN = """#!/usr/bin/env bash
# A stand-in for pyenv where the machine has none: `init -` and `rehash` as pyenv's own scripts do them.
root="${PYENV_ROOT:-$HOME/.pyenv}"
case "$1" in
  init) echo "export PATH=\\"$root/shims:\\${PATH}\\"; command pyenv rehash" ;;
  rehash) [ -w "$root/shims" ] || { echo "pyenv: cannot rehash: $root/shims isn't writable" >&2; exit 1; }
          printf '#!/bin/sh\\nexec %s "$@"\\n' "$(command -v python3)" > "$root/shims/python"; chmod +x "$root/shims/python" ;;
esac
"""


def _real_pyenv() -> Path | None:
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    return root if (root / "libexec" / "pyenv-rehash").is_file() and (root / "versions").is_dir() else None


@pytest.fixture()
def pyenv_home() -> Iterator[Path]:
    """A home outside /tmp with ~/.pyenv (shims made by a rehash) and a ~/.bash_profile running `pyenv init`."""
    parent = Path(tempfile.mkdtemp(prefix="leaf-pyenv-home-", dir="/var/tmp" if Path("/var/tmp").is_dir() else None))
    home = parent / "dev"
    pyenv = home / ".pyenv"
    real = _real_pyenv()
    if real is not None:
        for name in ("bin", "libexec", "completions", "pyenv.d"):
            shutil.copytree(real / name, pyenv / name, symlinks=True)
        (pyenv / "versions").symlink_to(real / "versions")
        if (real / "version").is_file():
            shutil.copy(real / "version", pyenv / "version")
    else:
        (pyenv / "bin").mkdir(parents=True)
        (pyenv / "bin" / "pyenv").write_text(STAND_IN)
        (pyenv / "bin" / "pyenv").chmod(0o755)
    (pyenv / "shims").mkdir()
    (home / ".bash_profile").write_text(PROFILE)
    env = {**os.environ, "HOME": str(home), "PYENV_ROOT": str(pyenv)}
    subprocess.run([str(pyenv / "bin" / "pyenv"), "rehash"], env=env, check=True, timeout=60)
    assert (pyenv / "shims" / "python").is_file()
    yield home
    shutil.rmtree(parent, ignore_errors=True)


def _bash(home: Path, prefix: list[str]) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "TERM": "xterm"}
    return subprocess.run([*prefix, "/bin/bash", "-lc", "echo hi"], env=env, capture_output=True, text=True, timeout=60)


def test_a_read_only_home_makes_the_login_shell_noisy(pyenv_home: Path) -> None:
    """The bug reproduced: this home under a sandbox that makes it read-only, as leaf's did."""
    plain = _bash(pyenv_home, [])
    assert (plain.stdout, plain.stderr) == ("hi\n", "")  # without a sandbox: clean, and the script wrote its stamp
    assert (pyenv_home / ".cache" / "login" / "stamps").read_text() == "stamp\n"
    read_only = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--"]
    noisy = _bash(pyenv_home, read_only)
    assert noisy.stdout == "hi\n" and "cannot rehash" in noisy.stderr and "isn't writable" in noisy.stderr


def _observations(repo: Path, tmp_path: Path, home: Path, sandbox: str, env: dict[str, str] | None = None) -> list[str]:
    commands = ["echo hi", "command -v python; python -c 'print(6 * 7)'; cat ~/.cache/login/stamps"]
    spec = script(tmp_path / f"{sandbox}.jsonl", *[turn(call("Bash", command=c)) for c in commands], {"content": "ok"})
    proc = leaf_process("fix", "--json", "--sandbox", sandbox, "--model", spec, "task", cwd=repo,
                        env={"HOME": str(home), **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        stdin=subprocess.DEVNULL)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr.decode()
    return [m["content"] for m in json.loads(stdout)["messages"] if m["role"] == "tool"]


def test_login_shell_under_the_sandbox_prints_what_it_prints_without(git_repo: Path, tmp_path: Path,
                                                                     pyenv_home: Path) -> None:
    stamps = pyenv_home / ".cache" / "login" / "stamps"
    shims = sorted(p.name for p in (pyenv_home / ".pyenv" / "shims").iterdir())
    inside = _observations(git_repo, tmp_path, pyenv_home, "auto")
    assert inside[0] == HI, inside[0]
    # python through the pyenv shim the login startup put on PATH (/etc/profile had reset it), as without
    assert inside[1].startswith(f"Exit code: 0\nSTDOUT:\n{pyenv_home}/.pyenv/shims/python\n42\nstamp\n"), inside[1]
    assert not stamps.exists()  # the login script wrote into the sandbox's private home, not this one
    # the user shows the agent's own shell their startup file: it then runs in every call, rehash included,
    # and writes only into the private home and its private copy of the shims
    inside = _observations(git_repo, tmp_path, pyenv_home, "auto", {"LEAF_SANDBOX_HOME": '[".bash_profile"]'})
    assert inside[0] == HI, inside[0]
    assert not stamps.exists() and sorted(p.name for p in (pyenv_home / ".pyenv" / "shims").iterdir()) == shims
    outside = _observations(git_repo, tmp_path, pyenv_home, "none")
    assert outside[0] == HI and stamps.read_text() == "stamp\n" * 2  # without it: one stamp a call, in the home
