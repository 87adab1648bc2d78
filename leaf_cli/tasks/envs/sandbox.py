"""Where grading commands and the agent's Bash run. One small protocol, three backends.

- `subprocess`: a plain child process with a scrubbed environment. Trusted code only: no network isolation.
- `bwrap` (the default where bubblewrap is installed): read-only root, writable workspace, no network
  (`--unshare-net`), its own pid namespace, dies with its parent.
- `docker`: the task's image, network none, the workspace bind-mounted (see `docker.py`).
`wrap(..., tmp=DIR)` gives every command of one attempt the same /tmp (DIR, a host folder the attempt owns), as
FrogNano's one container per episode had; without it each bwrap or docker command gets a fresh, empty /tmp.
`backends.make_sandbox` picks one by name (it imports every backend; none of them imports it).
Every backend kills the whole process group on timeout (`proc.run_process`).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from leaf_cli.errors import LeafError
from leaf_cli.tasks.envs.proc import RunResult, run_process
from leaf_cli.tools.bwrap import bwrap_argv, retry_lost_covers

if TYPE_CHECKING:
    from leaf_cli.tasks.format.task import Task


class Sandbox(Protocol):
    """Run commands against host folders. `writable` are the only paths a command may change."""

    name: str
    isolates_network: bool

    def prepare(self) -> None:
        """Check the backend can run here; raise LeafError naming what is missing."""
        ...

    def for_task(self, task: "Task") -> "Sandbox":
        """The sandbox for one task (Docker picks the task's image; host backends return themselves)."""
        ...

    def python(self, env_python: Path) -> str:
        """The interpreter tests run with: the cached venv's on the host, the image's in a container."""
        ...

    def wrap(self, argv: list[str], *, cwd: Path, writable: list[Path], readonly: list[Path] = (),
             network: bool = False, tmp: Path | None = None) -> list[str]:
        """The argv that runs `argv` inside the sandbox (also the agent Bash tool's prefix). `readonly`
        names host paths commands must see even where the backend hides parts of the host (a venv in /tmp).
        `tmp` is a host folder seen as /tmp, so the commands of one attempt share it."""
        ...

    def run(self, argv: list[str], *, cwd: Path, timeout: float, env: dict[str, str],
            writable: list[Path], readonly: list[Path] = (), network: bool = False) -> RunResult:
        """Run `argv` with a timeout; the process group dies when it expires."""
        ...

    def copy_in(self, src: Path, dest: Path) -> None:
        """Put a host file or folder where sandboxed commands see it."""
        ...

    def copy_out(self, src: Path, dest: Path) -> None:
        """Bring a file or folder a sandboxed command wrote back to the host."""
        ...


class HostPathSandbox:
    """Shared by backends that see host paths directly: copying in and out is a plain copy."""

    name = "host"
    isolates_network = False

    def prepare(self) -> None:
        return None

    def for_task(self, task: "Task") -> "HostPathSandbox":
        return self

    def python(self, env_python: Path) -> str:
        return str(env_python)

    def wrap(self, argv: list[str], *, cwd: Path, writable: list[Path], readonly: list[Path] = (),
             network: bool = False, tmp: Path | None = None) -> list[str]:
        return list(argv)

    def run(self, argv: list[str], *, cwd: Path, timeout: float, env: dict[str, str],
            writable: list[Path], readonly: list[Path] = (), network: bool = False) -> RunResult:
        return run_process(self.wrap(argv, cwd=cwd, writable=writable, readonly=readonly, network=network),
                           cwd=cwd, timeout=timeout, env=env)

    def copy_in(self, src: Path, dest: Path) -> None:
        _copy(src, dest)

    def copy_out(self, src: Path, dest: Path) -> None:
        _copy(src, dest)


class SubprocessSandbox(HostPathSandbox):
    """A plain subprocess: fast and simple, for trusted code (tests, gold patches). Network is not cut, and
    nothing is isolated: the agent's file tools (tools/host.py) run with no sandbox around them either, so their
    unconfined paths reach the whole host. `tmp` is ignored: /tmp is the host's own, shared by every command
    (and every attempt) anyway."""

    name = "subprocess"


class BwrapSandbox(HostPathSandbox):
    """bubblewrap: read-only root, a private /tmp (the attempt's `tmp` folder when given, else a fresh tmpfs
    per command), writable workspace, no network, own pid namespace."""

    name = "bwrap"
    isolates_network = True

    def prepare(self) -> None:
        if shutil.which("bwrap") is None:
            raise LeafError("the bwrap sandbox needs bubblewrap: install it (apt-get install -y bubblewrap) "
                            "or pass --sandbox subprocess for trusted code")

    def wrap(self, argv: list[str], *, cwd: Path, writable: list[Path], readonly: list[Path] = (),
             network: bool = False, tmp: Path | None = None) -> list[str]:
        return [*bwrap_argv("bwrap", cwd=cwd, writable=writable, readonly=readonly, network=network, tmp_dir=tmp),
                *argv]

    def run(self, argv: list[str], *, cwd: Path, timeout: float, env: dict[str, str],
            writable: list[Path], readonly: list[Path] = (), network: bool = False) -> RunResult:
        """As a plain run, but again, less the covers of sockets gone since, while bwrap did not start because a
        host socket it was to cover was dropped after the listing (the command never ran: this is its first run)."""

        def run_once(wrapped: list[str]) -> tuple[RunResult, str | None]:
            result = run_process(wrapped, cwd=cwd, timeout=timeout, env=env)
            said = result.stderr[:4096].partition("\n")[0]  # bwrap's one line, when it is bwrap that failed
            return result, said if result.returncode == 1 and said.startswith("bwrap: ") else None

        return retry_lost_covers(self.wrap(argv, cwd=cwd, writable=writable, readonly=readonly, network=network),
                                 run_once)


def _copy(src: Path, dest: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
