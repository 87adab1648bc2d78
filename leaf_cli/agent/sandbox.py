"""The sandbox the agent's commands run in, by default: bubblewrap on Linux, Seatbelt on macOS.

Inside: writes only to the work tree and a private /tmp (one per episode, so a file left there by one
command is there for the next, as without a sandbox); the repository's `.git/config` and hooks read-only;
leaf's state folder (runs, checkpoint store) and the home's credential folders hidden; the rest of the
file system read-only; a private pid namespace (no `/proc` of leaf, and every process dies with the
sandbox); no network unless asked; killed when leaf dies (`--die-with-parent`).

`--sandbox none` runs commands as plain subprocesses, after a warning that says what they can reach.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from leaf_cli.errors import LeafError

SANDBOXES = ("auto", "bwrap", "sandbox-exec", "none")

# Under the home folder: where credentials live. Hidden inside the sandbox (the rest of home is read-only).
HOME_SECRETS = (".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub", ".docker",
                ".kube", ".netrc", ".git-credentials", ".pgpass", ".pypirc", ".npmrc", ".config/leaf",
                ".local/share/keyrings", ".password-store", ".vault-token")

NO_SANDBOX_WARNING = ("leaf: warning: --sandbox none: the agent's commands run as you, with no sandbox. They can "
                      "read and write your home folder, other repositories and leaf's state folder {state} "
                      "(where the checkpoints that `leaf undo` needs are kept), reach the network, and read "
                      "other processes of yours. leaf still scrubs secrets from their environment, kills what "
                      "they leave running, and never runs the repository's git hooks or filters itself.")


@dataclass
class AgentSandbox:
    """What Workspace needs (`prefix`) and what to clean up when the episode ends (`close`)."""

    kind: str
    prefix: list[str] = field(default_factory=list)
    tmp_dir: Path | None = None

    def close(self) -> None:
        if self.tmp_dir is not None:
            shutil.rmtree(self.tmp_dir, ignore_errors=True)
            self.tmp_dir = None


def resolve_kind(kind: str) -> str:
    """`auto` becomes this platform's sandbox; an unknown name lists the valid ones."""
    if kind not in SANDBOXES:
        raise LeafError(f"unknown sandbox {kind!r}; choose one of: {', '.join(SANDBOXES)}")
    if kind != "auto":
        return kind
    if sys.platform == "darwin":
        return "sandbox-exec"
    if sys.platform.startswith("linux"):
        return "bwrap"
    raise LeafError(f"leaf has no sandbox for {sys.platform}; pass --sandbox none to run the agent's commands "
                    "without one")


def open_sandbox(kind: str, top: Path, cwd: Path, state_root: Path, *, network: bool = False,
                 git_dirs: tuple[Path, ...] = ()) -> AgentSandbox:
    """The sandbox for one episode in work tree `top` (commands start in `cwd`).

    `git_dirs` are the repository's git dir and common dir when they lie outside `top` (a linked worktree):
    writable, as the agent's own commits need them, with their config and hooks protected all the same.
    """
    kind = resolve_kind(kind)
    if kind == "none":
        return AgentSandbox("none")
    exe = shutil.which("bwrap" if kind == "bwrap" else "sandbox-exec")
    if exe is None:
        hint = ("install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap, pacman -S bubblewrap)"
                if kind == "bwrap" else "sandbox-exec ships with macOS; is /usr/bin on PATH?")
        raise LeafError(f"the {kind} sandbox is not available: {hint}; or pass --sandbox none to run the "
                        "agent's commands without one")
    state_root.mkdir(parents=True, exist_ok=True)
    tmp_dir = Path(tempfile.mkdtemp(prefix="leaf-tmp-"))
    top = top.resolve()
    writable = [top, *[d for d in git_dirs if not d.is_relative_to(top)]]
    protect = _protected(top, git_dirs)
    hidden = _hidden(state_root, writable)
    if kind == "bwrap":
        from leaf_cli.tools.bwrap import bwrap_argv

        prefix = bwrap_argv(exe, cwd=cwd.resolve(), writable=writable, network=network, tmp_dir=tmp_dir,
                            protect=protect, hidden=hidden)
    else:
        from leaf_cli.tools.seatbelt import seatbelt_argv, seatbelt_profile

        prefix = seatbelt_argv(exe, seatbelt_profile(writable=writable, tmp_dir=tmp_dir, protect=protect,
                                                     hidden=hidden, network=network))
    return AgentSandbox(kind, prefix, tmp_dir)


def _protected(top: Path, git_dirs: tuple[Path, ...]) -> list[Path]:
    """`.git/config` and hooks of every git dir of the work tree, read-only (hooks made if missing, so the
    agent cannot create the folder and plant one)."""
    dirs = [top / ".git"] if (top / ".git").is_dir() else []
    dirs += [d for d in git_dirs if d not in dirs]
    found = []
    for git_dir in dirs:
        if not git_dir.is_dir():
            continue
        (git_dir / "hooks").mkdir(exist_ok=True)
        found += [p for p in (git_dir / "config", git_dir / "config.worktree", git_dir / "hooks") if p.exists()]
    return found


def _hidden(state_root: Path, writable: list[Path]) -> list[Path]:
    """leaf's state and the home's credential folders, except any that contain the work tree."""
    home = Path.home()
    candidates = [state_root.resolve(), *[(home / name) for name in HOME_SECRETS]]
    return [p for p in candidates if p.exists() and not any(w.is_relative_to(p) for w in writable)]
