"""A cgroup v2 of the run's own, for the agent's commands when no sandbox holds them (`--sandbox none`).

The reaper finds survivors by scanning /proc, and a process that forks and exits again and again, each
generation in a new session, is always one step ahead of a scan: after its rounds it is still running.
A cgroup is what the kernel counts processes by, whatever their session or parent: every command starts
inside the run's cgroup (a child of leaf's own, so leaf stays out of it) and `kill` ends all of them at
once with `cgroup.kill` (Linux 5.14), or by freezing the cgroup first where that file is missing.

Available where leaf may create a folder under its own cgroup in a cgroup v2 hierarchy: root, or a user
whose systemd delegated the scope (a desktop session). Elsewhere `create` gives None and the warning for
`--sandbox none` says that the reaper's scans are all there is.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

EMPTY_TIMEOUT = 5.0
"""Seconds the cgroup gets to empty after its kill (the kernel's SIGKILL is asynchronous)."""


def _mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid one)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            return Path(left.split()[4])
    return None


def _own() -> str | None:
    """This process's cgroup v2 path (the `0::` line of /proc/self/cgroup)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    return next((line[3:] for line in lines if line.startswith("0::")), None)


class RunCgroup:
    """One run's cgroup: `prefix` puts a command in it, `kill` ends everything in it, `remove` deletes it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls) -> "RunCgroup | None":
        """A fresh cgroup under leaf's own, or None where cgroup v2 is missing or not writable by leaf."""
        mount, own = _mount(), _own()
        if mount is None or own is None:
            return None
        parent = mount / own.lstrip("/")
        _sweep(parent)
        path = parent / f"{_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            path.mkdir()
        except OSError:
            return None
        group = cls(path)
        if not os.access(path / "cgroup.procs", os.W_OK) or not group._can_kill():
            group.remove()
            return None
        return group

    def _can_kill(self) -> bool:
        return (self.path / "cgroup.kill").exists() or (self.path / "cgroup.freeze").exists()

    def prefix(self) -> list[str]:
        """An argv prefix that moves the command into this cgroup before it runs (and refuses to run it
        outside: a command the kill cannot reach is not started)."""
        script = 'echo $$ > "$0" || exit 126; exec "$@"'
        return ["/bin/sh", "-c", script, str(self.path / "cgroup.procs")]

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill(self) -> int:
        """SIGKILL every process in the cgroup, then wait (bounded) until it is empty; returns how many."""
        found = len(self.pids())
        if not found:
            return 0
        if (self.path / "cgroup.kill").exists():
            _write(self.path / "cgroup.kill", "1")  # the kernel kills all, forks racing it included
        else:
            self._kill_frozen()
        deadline = time.monotonic() + EMPTY_TIMEOUT
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        return found

    def _kill_frozen(self) -> None:
        """Without cgroup.kill: freeze (no fork can run), kill what is there, thaw so the kills land."""
        _write(self.path / "cgroup.freeze", "1")
        try:
            for pid in self.pids():
                try:
                    os.kill(pid, 9)
                except (ProcessLookupError, PermissionError):
                    pass
        finally:
            _write(self.path / "cgroup.freeze", "0")

    def remove(self) -> None:
        """Kill what is left and delete the cgroup (a populated one cannot be removed)."""
        self.kill()
        try:
            self.path.rmdir()
        except OSError:
            pass


_PREFIX = "leaf-run-"


def _sweep(parent: Path) -> None:
    """The cgroups of leaf runs whose leaf is gone (killed before it could clean up): what the agent left
    running in them is killed now, and the cgroups removed."""
    try:
        entries = list(parent.glob(f"{_PREFIX}*-*"))
    except OSError:
        return
    for folder in entries:
        pid = folder.name[len(_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            RunCgroup(folder).remove()


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError:
        pass
