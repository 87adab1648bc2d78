"""No process the agent started outlives its episode, even one that left its process group.

Bash kills each command's process group, but `setsid cmd &` or a double fork leaves it. Under the sandbox
the pid namespace ends them all. Without it (Linux), leaf makes itself a *child subreaper*: an orphan the
agent leaves is re-parented to leaf instead of init, so at the episode's end every descendant of leaf that
was not there before is one of the agent's, and is stopped (so it cannot fork again) and killed.

If leaf itself is killed (kill -9) a subreaper dies with it, so a watchdog process keeps a list of leaf's
descendants, refreshed every WATCH_INTERVAL seconds; when leaf's end of its pipe closes without a "done",
it stops and kills that list and everything below it. A process started in the last interval before leaf
died and already orphaned can escape it: that window is the limit of this path (the sandbox has none).
Where the run has a cgroup (cgroup.py), the watchdog also kills the cgroup whole, which nothing escapes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
WATCH_INTERVAL = 0.2
_KILL_ROUNDS = 20


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(option, value, 0, 0, 0) == 0


def make_undumpable() -> None:
    """Make /proc/<leaf>/{environ,fd,mem} unreadable to the agent's commands (same uid; root still can)."""
    _prctl(PR_SET_DUMPABLE, 0)


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) for every process visible in /proc."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            raw = Path(entry.path, "stat").read_bytes()
        except OSError:
            continue
        fields = raw[raw.rindex(b")") + 2:].split()
        table[int(entry.name)] = (int(fields[1]), fields[19].decode())
    return table


def descendants(root: int, table: dict[int, tuple[int, str]], skip: set[int] = frozenset()) -> dict[int, str]:  # type: ignore[assignment]
    """Every process below `root` (not below the pids in `skip`), with its start time."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _start) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {}, [c for c in children.get(root, []) if c not in skip]
    while todo:
        pid = todo.pop()
        found[pid] = table[pid][1]
        todo += [c for c in children.get(pid, []) if c not in skip]
    return found


def kill_all(targets: dict[int, str], root: int | None = None, skip: set[int] = frozenset()) -> int:  # type: ignore[assignment]
    """SIGSTOP then SIGKILL `targets` (checked by start time, so a reused pid is spared) and, round after
    round, whatever they forked meanwhile (and whatever is below `root` outside `skip`). Returns how many."""
    killed: set[int] = set()
    for _ in range(_KILL_ROUNDS):
        table = process_table()
        live = {pid for pid, start in targets.items() if table.get(pid, (0, ""))[1] == start}
        for pid in list(live):
            live |= set(descendants(pid, table))
        if root is not None:
            live |= set(descendants(root, table, skip))
        live -= killed | {os.getpid()}
        if not live:
            break
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in live:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        killed |= live
        targets = {pid: table[pid][1] for pid in live if pid in table}
    return len(killed)


class Reaper:
    """`start()` before the agent's first command, `stop()` when its episode ends."""

    def __init__(self, enabled: bool, before: set[int], watchdog: subprocess.Popen[bytes] | None) -> None:
        self.enabled, self.before, self.watchdog = enabled, before, watchdog

    @classmethod
    def for_sandbox(cls, sandbox: "object") -> "Reaper":
        """The reaper for an episode in `sandbox` (an AgentSandbox): watched without a sandbox, with its cgroup."""
        group = getattr(sandbox, "cgroup", None)
        return cls.start(watch=getattr(sandbox, "kind", "") == "none", cgroup=group.path if group else None)

    @classmethod
    def start(cls, *, watch: bool = True, cgroup: Path | None = None) -> "Reaper":
        enabled = _prctl(PR_SET_CHILD_SUBREAPER, 1)
        before = set(descendants(os.getpid(), process_table())) if enabled else set()
        watchdog = None
        if enabled and watch:
            skip = ",".join(str(p) for p in before)
            # Run by path with -I -S: this file needs only the standard library, whatever PYTHONPATH says.
            watchdog = subprocess.Popen([sys.executable, "-I", "-S", __file__, str(os.getpid()), skip,
                                         str(cgroup or "")],
                                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True, env={"PATH": os.environ.get("PATH", "")})
            before.add(watchdog.pid)
        return cls(enabled, before, watchdog)

    def stop(self) -> int:
        """Kill every descendant leaf did not have at `start`; return how many."""
        if not self.enabled:
            return 0
        if self.watchdog is not None:
            try:
                assert self.watchdog.stdin is not None
                self.watchdog.stdin.write(b"done\n")
                self.watchdog.stdin.close()
            except OSError:
                pass
            self.watchdog.wait(timeout=10)
        count = kill_all({}, root=os.getpid(), skip=self.before)
        _reap_zombies(self.before)
        _prctl(PR_SET_CHILD_SUBREAPER, 0)
        self.enabled = False
        return count


def _reap_zombies(keep: set[int]) -> None:
    """Collect the exit status of the orphans leaf adopted (not of the children it started itself)."""
    for pid in descendants(os.getpid(), process_table(), keep):
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def _watch(leaf: int, skip: set[int], cgroup: str = "") -> None:
    """The watchdog's loop: remember leaf's descendants until leaf says done or dies."""
    import selectors

    selector = selectors.DefaultSelector()
    selector.register(sys.stdin.buffer, selectors.EVENT_READ)
    skip.add(os.getpid())
    seen: dict[int, str] = {}
    while True:
        seen.update(descendants(leaf, process_table(), skip))
        if selector.select(WATCH_INTERVAL):
            said = sys.stdin.buffer.read()
            if said.startswith(b"done"):
                return
            break  # EOF without "done": leaf is gone
    time.sleep(0.05)
    if cgroup:
        _kill_cgroup(Path(cgroup))
    kill_all(seen)


def _kill_cgroup(path: Path) -> None:
    """Kill everything in the run's cgroup and remove it (cgroup.RunCgroup.remove, standard library only)."""
    try:
        if (path / "cgroup.kill").exists():
            (path / "cgroup.kill").write_text("1")
        else:
            (path / "cgroup.freeze").write_text("1")
            for pid in (path / "cgroup.procs").read_text().split():
                os.kill(int(pid), signal.SIGKILL)
            (path / "cgroup.freeze").write_text("0")
        deadline = time.monotonic() + 5
        while (path / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.01)
        path.rmdir()
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    _watch(int(sys.argv[1]), {int(p) for p in sys.argv[2].split(",") if p}, sys.argv[3] if len(sys.argv) > 3 else "")
