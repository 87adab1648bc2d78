"""The sandbox the agent's commands run in, by default: bubblewrap on Linux, Seatbelt on macOS.

Inside: writes only to the work tree, a private /tmp (one per episode, so a file left there by one
command is there for the next, as without a sandbox) and a private home (sandbox_home.py: empty but for the
toolchain folders of an allowlist, read-only); the repository's `.git/config` and hooks read-only; leaf's
state folder (runs, checkpoint store) and the home's credential folders hidden; the rest of the file
system read-only; a private pid namespace (no `/proc` of leaf, and every process dies with the
sandbox); no network unless asked; no socket of the host's (tools/bwrap.py `host_socket_cover`, and
Landlock's scoping in the command server); killed when leaf dies (`--die-with-parent`).

The file tools (Read, Write, Edit, Glob) run inside the same sandbox, in a tool host of the episode
(`file_host`, tools/host.py) with the same binds and the same /tmp: the sandbox is the boundary for every
tool, and the tools' path checks only explain a refusal. `--sandbox none` runs commands as plain
subprocesses, after a warning that says what they can reach, each inside the run's cgroup where leaf can make
one (cgroup.py), so that the episode's end kills all of them, and the file tools in leaf's own process, where
they walk each path beneath the work tree without following a symlink out of it (tools/beneath.py).
"""

from __future__ import annotations

import functools
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from leaf_cli.agent.cgroup import RunCgroup
from leaf_cli.agent.sandbox_home import HOME_PREFIX, PrivateHome, private_home, visible_folders
from leaf_cli.errors import InfraError, LeafError
from leaf_cli.tools.bwrap import PRIVATE_TMP, retry_lost_covers
from leaf_cli.tools.host import ToolHost, host_argv, host_env, leaf_root
from leaf_cli.tools.sandboxes import AGENT, check, offered

SANDBOXES = offered(AGENT)
"""The agent's sandboxes (auto / bwrap / sandbox-exec / none), from the one registry (tools/sandboxes.py)."""

# Under the home folder: where credentials live. The sandbox's home shows only an allowlist of toolchain
# folders (sandbox_home.py); these stay hidden even inside a folder the user adds to it (and on macOS).
HOME_SECRETS = (".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub", ".docker",
                ".kube", ".netrc", ".git-credentials", ".pgpass", ".pypirc", ".npmrc", ".config/leaf",
                ".local/share/keyrings", ".password-store", ".vault-token", ".config/git/credentials",
                ".cache/huggingface", ".cargo/credentials.toml", ".cargo/credentials", ".gem/credentials",
                ".m2/settings.xml", ".gradle/gradle.properties", ".config/pypoetry/auth.toml", ".bundle/config")

NO_SANDBOX_WARNING = ("leaf: warning: --sandbox none: the agent's commands run as you, with no sandbox. They can "
                      "read and write your home folder, other repositories and leaf's state folder {state} "
                      "(where the checkpoints that `leaf undo` needs are kept), reach the network, and read "
                      "other processes of yours, leaf's own included: through /proc/<pid>/environ they can read "
                      "leaf's environment with every secret in it (as root, or wherever leaf cannot make itself "
                      "non-dumpable, nothing blocks this). leaf still scrubs secrets from their own environment, "
                      "kills what they leave running, and never runs the repository's git hooks or filters itself.")
CGROUP_NOTE = {True: " Their processes run in a cgroup of the run's own, and all of them end with it.",
               False: (" No cgroup v2 is writable by leaf here, so leaf finds what they leave running by scanning "
                       "/proc: a process that keeps forking into new sessions can outrun that and keep running "
                       "after leaf exits.")}


def no_sandbox_warning(state: Path, cgroup: bool) -> str:
    """The `--sandbox none` warning; `cgroup` says whether the run's processes will be held by one."""
    return NO_SANDBOX_WARNING.format(state=state) + CGROUP_NOTE[cgroup]


SHELL_START_TIMEOUT = 15.0
"""Seconds the episode's sandbox gets to start its command server."""


@dataclass
class AgentSandbox:
    """What Workspace needs (`prefix`) and what to clean up when the episode ends (`end_episode`, `close`).

    With bubblewrap, `holder` is the episode's one bwrap, running the command server; `prefix` is then the
    client that hands each command to it (sandbox_shell.py). `fresh` builds that bwrap's argv anew for each
    process started in it (the holder, the file tools' host), since the host's sockets it covers are listed
    as it is built: a listing kept from the sandbox's opening names sockets dropped since, which bwrap
    cannot mount over (it then does not start), and misses those bound since (they would stay reachable).
    `tool_prefix` (Seatbelt) runs a program inside a sandbox with the same rules: the file tools' host.
    """

    kind: str
    prefix: list[str] = field(default_factory=list)
    tmp_dir: Path | None = None
    fresh: Callable[[], list[str]] | None = None
    server: list[str] = field(default_factory=list)
    """bwrap: the command server's argv, run inside `fresh()`'s sandbox."""
    env: dict[str, str] | None = None
    holder: subprocess.Popen[bytes] | None = None
    home: PrivateHome | None = None
    tool_prefix: list[str] = field(default_factory=list)
    hosts: list[ToolHost] = field(default_factory=list, repr=False)

    def file_host(self, root: Path, home: str | None, *, confined: bool = True) -> ToolHost | None:
        """The episode's file-tool host for work tree `root`, inside this sandbox (None without one: then the
        tools run in leaf's process, beneath the tree). Confined (`leaf fix`): the observations are `leaf
        fix`'s own, and a path outside the tree is refused before the sandbox would stop it; unconfined
        (`leaf eval`'s attempts): any path, as FrogNano's harness took it."""
        tail = host_argv(root, confined=confined)
        if self.fresh is not None:
            fresh = self.fresh

            def build() -> list[str]:
                return [*fresh(), *tail]

            host = ToolHost(build(), env=host_env(home), cwd=root, rebuild=build)
        elif self.tool_prefix:
            host = ToolHost([*self.tool_prefix, *tail], env=host_env(home), cwd=root)
        else:
            return None
        self.hosts.append(host)
        return host
    cgroup: RunCgroup | None = None
    """Without a sandbox: the run's cgroup every command starts in (`prefix` moves it there)."""
    control: Path | None = None
    """The host folder of the command server's socket (bwrap): the client's path, out of the sandbox's reach."""
    scope: str = ""
    """What the command server reported of its Landlock scoping when it started."""

    def start(self) -> "AgentSandbox":
        """Start the episode's sandbox (its pid namespace and command server) from a fresh listing of the
        host's sockets; again, less the covers of sockets gone since, while bwrap failed on one of those."""
        if self.fresh is None or self.control is None:
            return self

        def launch(argv: list[str]) -> tuple[tuple[str, str], str | None]:
            said, reason = self._launch(argv)
            if said.startswith("ready"):
                return (said, reason), None
            self._stop_holder()
            return (said, reason), reason

        said, reason = retry_lost_covers(self.fresh(), launch)
        if said.startswith("ready"):
            self.scope = said.removeprefix("ready").strip()
            return self
        raise InfraError(f"the bwrap sandbox did not start{reason}; pass --sandbox none to run the agent's "
                         "commands without one", "sandbox")

    def _launch(self, argv: list[str]) -> tuple[str, str]:
        """Start the holder under `argv`: what its server said on the ready pipe, and why it did not start
        (`: bwrap's last stderr line`, or the wait that ran out) for the error line."""
        assert self.control is not None
        self.control.mkdir(mode=0o700, exist_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ready_read, ready_write = os.pipe()
        with tempfile.TemporaryFile() as errors:  # bwrap's own reason, when it does not start
            try:
                (self.control / "sock").unlink(missing_ok=True)
                listener.bind(str(self.control / "sock"))
                listener.listen(64)
                self.holder = subprocess.Popen([*argv, *self.server, str(listener.fileno()), str(ready_write)],
                                               env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                               stderr=errors, start_new_session=True,
                                               pass_fds=(listener.fileno(), ready_write))
            except BaseException:
                os.close(ready_read)
                raise
            finally:
                listener.close()  # the server holds it now; the path stays bound for the clients
                os.close(ready_write)
            said, ended = _read_ready(ready_read, time.monotonic() + SHELL_START_TIMEOUT)
            if said.startswith("ready"):
                return said, ""
            if not ended:
                return said, f" within {SHELL_START_TIMEOUT:g} s (its command server never said it was ready)"
            errors.seek(0)
            lines = errors.read()[-4096:].decode(errors="replace").strip().splitlines()
        return said, f": {lines[-1].strip()}" if lines else " (is bubblewrap allowed to create namespaces here?)"

    def end_episode(self) -> None:
        """Kill every process of the episode (the whole pid namespace, or the run's cgroup, and the file tools'
        host); `ensure_started` makes a fresh sandbox (and a host starts again at the next file-tool call)."""
        self._stop_hosts()
        self._stop_holder()
        if self.cgroup is not None:
            self.cgroup.kill()

    def ensure_started(self) -> None:
        """Before an episode: the sandbox's command server is running (started again after `end_episode`)."""
        if self.holder is None and self.fresh is not None:
            self.start()

    def close(self) -> None:
        self._stop_hosts()
        self._stop_holder()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if self.tmp_dir is not None:
            shutil.rmtree(self.tmp_dir, ignore_errors=True)
            self.tmp_dir = None
        if self.home is not None:
            self.home.close()
            self.home = None

    def _stop_hosts(self) -> None:
        for host in self.hosts:
            host.close()

    def _stop_holder(self) -> None:
        if self.holder is not None:
            inner = _children(self.holder.pid)
            self.holder.kill()  # bwrap's pid-namespace init dies with it (--die-with-parent), and so does all inside
            self.holder.wait()
            self.holder = None
            _wait_gone(inner)  # that death is asynchronous: the episode ends only once the namespace is empty
        if self.control is not None:
            shutil.rmtree(self.control, ignore_errors=True)


def _read_ready(fd: int, deadline: float) -> tuple[str, bool]:
    """What the server wrote on its ready pipe before `deadline`, and whether the pipe ended (EOF: the
    sandbox died before it said anything more) rather than the wait."""
    said, ended = b"", False
    try:
        while not said.endswith(b"\n") and (left := deadline - time.monotonic()) > 0:
            if not select.select([fd], [], [], left)[0]:
                break
            chunk = os.read(fd, 256)
            if not chunk:
                ended = True
                break
            said += chunk
    finally:
        os.close(fd)
    return said.decode(errors="replace"), ended


STOP_TIMEOUT = 5.0
"""Seconds the episode's pid namespace gets to empty after its holder is killed."""


def _children(pid: int) -> list[int]:
    """bwrap's forked child, the pid namespace's init (its exit comes only after every process inside died)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _wait_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.01)


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its new parent to reap it is dead: nothing of it runs)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def resolve_kind(kind: str) -> str:
    """`auto` becomes this platform's sandbox (none where leaf has none); an unknown name lists the valid ones."""
    if check(kind, AGENT) != "auto":
        return kind
    if sys.platform == "darwin":
        return "sandbox-exec"
    if sys.platform.startswith("linux"):
        return "bwrap"
    return "none"  # no sandbox exists for this platform: run without one, after the warning


def sandbox_program(kind: str) -> str:
    """The program of sandbox `kind` (bwrap or sandbox-exec); LeafError with the install hint when missing."""
    exe = shutil.which("bwrap" if kind == "bwrap" else "sandbox-exec")
    if exe is None:
        hint = ("install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap, pacman -S bubblewrap)"
                if kind == "bwrap" else "sandbox-exec ships with macOS; is /usr/bin on PATH?")
        raise LeafError(f"the {kind} sandbox is not available: {hint}; or pass --sandbox none to run the "
                        "agent's commands without one")
    return exe


def open_sandbox(kind: str, top: Path, cwd: Path, state_root: Path, *, network: bool = False,
                 git_dirs: tuple[Path, ...] = (), env: dict[str, str] | None = None,
                 home_extra: Sequence[str] = ()) -> AgentSandbox:
    """The sandbox for one episode in work tree `top` (commands start in `cwd`).

    `home_extra` are the user's additions to the home's allowlist (`sandbox_home`, under the home or absolute).

    `git_dirs` are the repository's git dir and common dir when they lie outside `top` (a linked worktree):
    writable, as the agent's own commits need them, with their config and hooks protected all the same.
    """
    kind = resolve_kind(kind)
    if kind == "none":
        return unsandboxed()
    exe = sandbox_program(kind)
    state_root.mkdir(parents=True, exist_ok=True)
    _sweep_stale_tmp()
    tmp_dir = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-"))
    top = top.resolve()
    writable = [top, *[d for d in git_dirs if not d.is_relative_to(top)]]
    protect = _protected(top, git_dirs)
    hidden = _hidden(state_root, writable)
    if kind == "bwrap":
        from leaf_cli.tools.bwrap import bwrap_argv

        home = private_home(home_extra, hidden)
        try:
            if home is not None:
                hidden = [h for h in hidden if home.shows(h, writable)]  # the rest are not in the private home at all
                home.capture_login(bwrap_argv(exe, cwd=home.home, writable=[], hidden=hidden,
                                              home=home.bwrap_args(startup=True)), env)
            # leaf's own package is bound back for the file tools' host (a checkout under /tmp is hidden otherwise)
            sandbox = functools.partial(bwrap_argv, exe, cwd=cwd.resolve(), writable=writable, readonly=[leaf_root()],
                                        network=network, tmp_dir=tmp_dir, protect=protect, hidden=hidden,
                                        home=home.bwrap_args() if home else ())
            return with_shell(sandbox, tmp_dir, env, home)
        except BaseException:
            if home is not None:
                home.close()
            raise
    else:
        from leaf_cli.tools.seatbelt import seatbelt_argv, seatbelt_profile

        readable = visible_folders(Path.home(), home_extra, hidden)
        prefix = seatbelt_argv(exe, seatbelt_profile(writable=writable, tmp_dir=tmp_dir, protect=protect,
                                                     hidden=hidden, network=network, home=Path.home(),
                                                     home_readable=readable))
    return AgentSandbox(kind, prefix, tmp_dir, tool_prefix=prefix)


def unsandboxed() -> AgentSandbox:
    """`--sandbox none`: plain subprocesses, each started inside the run's cgroup where one can be made."""
    group = RunCgroup.create()
    return AgentSandbox("none", group.prefix() if group else [], cgroup=group)


def with_shell(sandbox: Callable[[], list[str]], tmp_dir: Path, env: dict[str, str] | None,
               home: PrivateHome | None = None) -> AgentSandbox:
    """The episode's bwrap running the command server, and the client argv each command runs through.

    `sandbox` builds a bwrap argv (ending in `--`) that binds `tmp_dir` as /tmp, anew for each bwrap started
    (the host's sockets are listed as it is built: `AgentSandbox.fresh`); `env` is the holder's own
    environment (visible inside through /proc, so never leaf's secrets). `leaf fix` and `leaf eval`'s
    attempts (tasks/runner/attempt.py) both run their Bash calls through this one mechanism."""
    from leaf_cli.agent import sandbox_shell

    shell_dir = tmp_dir / ".leaf"
    shell_dir.mkdir(exist_ok=True)
    (shell_dir / "shell.py").write_text(Path(sandbox_shell.__file__).read_text())
    # The socket's folder is the host's, never the agent's /tmp: a name there can be swapped for a symlink.
    control = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-ctl-"))
    server = [sys.executable, "-I", "-S", f"{PRIVATE_TMP}/.leaf/shell.py", "serve"]
    client = [sys.executable, "-I", "-S", sandbox_shell.__file__, "client", str(control / "sock"), "--"]
    return AgentSandbox("bwrap", client, tmp_dir, fresh=lambda: _hiding(sandbox(), control), server=server, env=env,
                        control=control, home=home).start()


def _hiding(sandbox: list[str], control: Path) -> list[str]:
    """`sandbox` (a bwrap argv ending in `--`) with `control` covered, where the private /tmp does not
    already hide it (a TMPDIR outside /tmp)."""
    if control.is_relative_to(PRIVATE_TMP):
        return sandbox
    return [*sandbox[:-1], "--tmpfs", str(control), "--"]


_TMP_PREFIX = "leaf-tmp-"


def _sweep_stale_tmp() -> None:
    """Remove the private /tmp and home folders of leaf processes that are gone (killed before they could
    clean up)."""
    for prefix in (_TMP_PREFIX, HOME_PREFIX):
        for folder in Path(tempfile.gettempdir()).glob(f"{prefix}*-*"):
            _sweep_one(folder, folder.name[len(prefix):].split("-", 1)[0])


def _sweep_one(folder: Path, pid: str) -> None:
    if not pid.isdigit() or folder.stat().st_uid != os.getuid():
        return
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        shutil.rmtree(folder, ignore_errors=True)
    except PermissionError:
        pass  # alive, someone else's


def _protected(top: Path, git_dirs: tuple[Path, ...]) -> list[Path]:
    """`.git/config` and hooks of every git dir of the work tree, read-only (hooks made if missing, so the
    agent cannot create the folder and plant one)."""
    dirs = [top / ".git"] if (top / ".git").is_dir() else []
    dirs += [d for d in git_dirs if d not in dirs]
    found = []
    for git_dir in dirs:
        if not git_dir.is_dir():
            continue
        if (git_dir / "objects").is_dir():  # the common dir: the one whose hooks git runs
            (git_dir / "hooks").mkdir(exist_ok=True)
        found += [p for p in (git_dir / "config", git_dir / "config.worktree", git_dir / "hooks") if p.exists()]
    return found


def _hidden(state_root: Path, writable: list[Path]) -> list[Path]:
    """leaf's state and the home's credential folders, except any that contain the work tree."""
    home = Path.home()
    candidates = [state_root.resolve(), *[(home / name) for name in HOME_SECRETS]]
    return [p for p in candidates if p.exists() and not any(w.is_relative_to(p) for w in writable)]
