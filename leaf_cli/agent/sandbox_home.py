"""The home folder inside the agent's sandbox: a private, writable, empty folder at the home's own path,
with the toolchain folders of an allowlist bound back read-only.

An allowlist, not a denylist of credential folders: credentials live in too many places to name them all
(`~/.config/git/credentials`, `~/.cache/huggingface/token`, `~/.cargo/credentials.toml`, a token in
`~/.gitconfig`, an `export` in `~/.bashrc`), so nothing of the home is visible unless it is a language
toolchain or an offline build cache on TOOLCHAIN_HOME, leaf's own interpreter and package, the active
virtual environment, or a path the user names in `sandbox_home` (their config).

The shell's startup files are not shown to the agent (they often export tokens), yet `bash -lc` must start
as it does without the sandbox: /etc/profile resets PATH, and the user's `~/.profile` puts pyenv, cargo or
nvm back. So leaf runs the login startup once per sandbox, in a sandbox of its own that shows the startup
files (and writes, like the agent's, into the private home), and writes a private `~/.bash_profile` that
exports what it set: the variables of the agent's allowlist whose values are not credentials.

The folder is writable, so a command or a startup file (when the user adds one) that writes under the home
works as it does without the sandbox, into the private copy, which is removed with the sandbox. The shims
folders that version managers rewrite on every login (`pyenv init` runs `pyenv rehash`) are bound as
private writable copies over their read-only toolchain: no `pyenv: cannot rehash: …/shims isn't writable`
in any observation. `~/.gitconfig` is replaced by one holding only the user's name and e-mail, so the
agent's `git commit` and `git stash` work without any other setting (or token) of the real one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import leaf_cli
from leaf_cli.agent.agent_env import allowed
from leaf_cli.agent.secrets import is_secret

TOOLCHAIN_HOME = (
    # Python: version managers, uv-managed interpreters, pipx/user installs, named virtual environments
    ".pyenv", ".local/share/uv/python", ".local/share/uv/tools", ".local/share/pipx", ".local/bin", ".local/lib",
    ".virtualenvs", ".local/share/virtualenvs", ".cache/pypoetry/virtualenvs", ".conda/envs", "miniconda3",
    "anaconda3", "miniforge3", "mambaforge",
    # Node, Deno, Bun
    ".nvm", ".nodenv", ".volta", ".bun/bin", ".deno/bin",
    # Rust (not ~/.cargo itself: credentials.toml and config.toml live there), Go
    ".rustup", ".cargo/bin", ".cargo/env", ".cargo/registry", ".cargo/git", "go/bin", "go/pkg/mod",
    # JVM (the artifact caches, not settings.xml or gradle.properties), Ruby, Haskell, OCaml, Lean, Nix
    ".sdkman/candidates", ".m2/repository", ".gradle/caches", ".gradle/wrapper", ".rbenv", ".ghcup", ".opam",
    ".elan", ".nix-profile",
)
"""Folders (and the one file `.cargo/env` that cargo's installer sources) under the home, bound read-only
when they exist: interpreters, compilers, installed tools and the offline dependency caches builds read."""

WRITABLE_COPIES = (".pyenv/shims", ".rbenv/shims", ".nodenv/shims")
"""Bound as private writable copies: version managers rewrite them at login and after installs."""

STARTUP_FILES = (".bash_profile", ".bash_login", ".profile", ".bashrc", ".bash_aliases")
"""What bash reads at login (and what those usually source): shown only to the one run that captures it."""


@dataclass
class PrivateHome:
    """The host side of the sandbox's home: `root/home` is mounted at `home`, `readonly` bound back into it,
    each (`root/rw/N`, destination) of `copies` bound writable over its read-only toolchain."""

    home: Path
    root: Path
    readonly: list[Path] = field(default_factory=list)
    copies: list[tuple[Path, Path]] = field(default_factory=list)

    def bwrap_args(self, startup: bool = False) -> list[str]:
        """The mounts of this home; with `startup`, the user's startup files too (for `capture_login`)."""
        args = ["--bind", str(self.root / "home"), str(self.home)]
        shown = [*self.readonly, *([self.home / n for n in STARTUP_FILES if (self.home / n).is_file()] if startup else [])]
        for path in shown:
            args += ["--ro-bind", str(path), str(path)]
        for copy, dest in self.copies:
            args += ["--bind", str(copy), str(dest)]
        return args

    def shows(self, path: Path, writable: Sequence[Path] = ()) -> bool:
        """Whether `path` can be seen in this home: under a folder bound into it (then it must be hidden
        again), or outside the home."""
        return not path.is_relative_to(self.home) or _under_any(path, [*self.readonly, *writable])

    def capture_login(self, sandbox: list[str], env: dict[str, str] | None) -> None:
        """Run the login startup under `sandbox` (a bwrap argv mounting `bwrap_args(startup=True)`) and
        write the private `~/.bash_profile` that sets, for the agent's shell, what it set."""
        env = dict(env if env is not None else os.environ)
        script = f"printf '{_MARK}'; env -0"
        try:
            proc = subprocess.run([*sandbox, "/bin/bash", "-lc", script], env=env, capture_output=True,
                                  stdin=subprocess.DEVNULL, timeout=LOGIN_TIMEOUT, start_new_session=True)
            out = proc.stdout.split(_MARK.encode(), 1)[1] if _MARK.encode() in proc.stdout else b""
        except (OSError, subprocess.TimeoutExpired):
            out = b""
        for name in STARTUP_FILES:  # the empty mount points that bwrap made for them stay out of the agent's home
            mount_point = self.root / "home" / name
            if (self.home / name).is_file() and mount_point.is_file() and mount_point.stat().st_size == 0:
                mount_point.unlink()
        captured = dict(e.split("=", 1) for e in out.decode(errors="replace").split("\0") if "=" in e)
        (self.root / "home" / ".bash_profile").write_text(login_profile(captured or env, env))

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


LOGIN_TIMEOUT = 15.0
"""Seconds the user's login startup gets to run once at the sandbox's start."""
_MARK = "LEAF-LOGIN-ENV:"
_SHELL_OWN = frozenset({"HOME", "PWD", "OLDPWD", "SHLVL", "_"})


def login_profile(captured: dict[str, str], env: dict[str, str]) -> str:
    """A `.bash_profile` exporting the captured login variables that the agent may have: on the allowlist,
    not credentials, not the shell's own, and not one `--pass-env` let in (that one keeps leaf's value)."""
    from shlex import quote

    passed = {k for k in env if not allowed(k)}
    lines = [f"export {k}={quote(v)}\n" for k, v in sorted(captured.items())
             if allowed(k) and not is_secret(k, v) and k not in _SHELL_OWN and k not in passed and k.isidentifier()]
    return ("# Written by leaf for the sandbox: what your login startup files set, the variables leaf lets the agent\n"
            "# have only (the files themselves are not shown here). See sandbox_home in leaf's README.\n" + "".join(lines))


HOME_PREFIX = "leaf-home-"


def private_home(extra: Sequence[str] = (), hidden: Sequence[Path] = ()) -> PrivateHome | None:
    """A fresh private home for one sandbox (None where the home is missing or is `/`)."""
    home = Path.home()
    if not home.is_dir() or home.resolve() == Path("/"):
        return None
    root = Path(tempfile.mkdtemp(prefix=f"{HOME_PREFIX}{os.getpid()}-"))
    (root / "home").mkdir()
    box = PrivateHome(home=home, root=root, readonly=visible_folders(home, extra, hidden))
    for index, name in enumerate(n for n in WRITABLE_COPIES if (home / n).is_dir() and _under_any(home / n, box.readonly)):
        copy = root / "rw" / str(index)
        shutil.copytree(home / name, copy, symlinks=True)
        box.copies.append((copy, home / name))
    identity = git_identity(root)
    if identity:
        (root / "home" / ".gitconfig").write_text(identity)
    return box


def visible_folders(home: Path, extra: Sequence[str] = (), hidden: Sequence[Path] = ()) -> list[Path]:
    """What of the home the sandbox shows read-only: the toolchain allowlist, the user's additions, the
    active virtual environment, leaf's interpreter and package; never the home itself, an ancestor of it, or
    anything inside a hidden path (leaf's state, the credential folders)."""
    names = [*TOOLCHAIN_HOME, *extra]
    candidates = [home / Path(name).expanduser() for name in names]
    candidates += [Path(p) for p in (os.environ.get("VIRTUAL_ENV"), os.environ.get("CONDA_PREFIX")) if p]
    candidates += [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent,
                   Path(leaf_cli.__file__).resolve().parent.parent]
    home_real = home.resolve()
    found: list[Path] = []
    for path in candidates:
        if not path.is_absolute() or not path.exists():
            continue
        real = path.resolve()
        if (not path.is_relative_to(home) and not real.is_relative_to(home_real)) or home_real.is_relative_to(real):
            continue  # outside the home the sandbox shows it anyway; the home itself never
        if any(real.is_relative_to(h) for h in hidden):
            continue  # a hidden path inside a visible folder is covered again afterwards (bwrap_argv's `hidden`)
        dest = path if path.is_relative_to(home) else home / real.relative_to(home_real)
        if dest not in found:
            found.append(dest)
    return found


def _under_any(path: Path, folders: Sequence[Path]) -> bool:
    return any(path.is_relative_to(f) for f in folders)


GIT_TIMEOUT = 5.0


def git_identity(cwd: Path) -> str:
    """A ~/.gitconfig with only the user's name and e-mail from their global git configuration ('' if none).

    Run in `cwd` (a fresh folder) with discovery stopped above it: never inside the agent's repository,
    whose `.git/config` is the agent's to plant."""
    lines = []
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(cwd.parent)}
    for key in ("name", "email"):
        try:
            proc = subprocess.run(["git", "config", "--global", "--get", f"user.{key}"], capture_output=True, cwd=cwd,
                                  env=env, text=True, timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        value = proc.stdout.strip().replace("\\", "\\\\").replace('"', '\\"')
        if proc.returncode == 0 and value and "\n" not in value:
            lines.append(f'\t{key} = "{value}"\n')
    return "[user]\n" + "".join(lines) if lines else ""
