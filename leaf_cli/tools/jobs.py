"""The processes an episode's Bash calls leave running, and the episode-end hook that kills them.

FrogNano's harness let a command's background jobs live on after the call returned (start a server in one
call, query it in the next: common in terminal tasks), and so does leaf, within one episode. Each Bash call
runs in a session of its own; `Jobs` remembers the session ids and `close` (called by `run_episode` when the
episode ends, through `Workspace.end_episode`) kills every process still in one of them, then runs the
`on_close` hooks, where a reaper that also finds descendants which left their session (setsid, double fork)
plugs in.

Session ids are safe to signal by: Linux never hands out a pid that is still some process's session id, so
a recorded id names our session for as long as any process is in it. Once it is empty the number may be
reused; a reuse by another of leaf's own Bash calls is seen at `add` and the stale record dropped.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Callable

Hook = Callable[[list[int]], None]
"""Called with the session ids of an episode's Bash calls when the episode ends, after leaf's own kill."""

_owners: dict[int, "Jobs"] = {}  # session id -> the Jobs that recorded it (all workspaces of this process)
_lock = threading.Lock()
KILL_ROUNDS = 3
"""Passes over the process table: a process that forks while its session is being killed is caught next pass."""


class Jobs:
    """The sessions one episode's Bash calls started."""

    def __init__(self) -> None:
        self._sessions: list[int] = []
        self.on_close: list[Hook] = []

    @property
    def sessions(self) -> list[int]:
        return list(self._sessions)

    def add(self, sid: int) -> None:
        with _lock:
            previous = _owners.get(sid)
            if previous is not None and previous is not self and sid in previous._sessions:
                previous._sessions.remove(sid)  # the number was reused, so that session is empty
            _owners[sid] = self
            if sid not in self._sessions:
                self._sessions.append(sid)

    def close(self) -> None:
        """Kill every process left in the recorded sessions, then run the hooks. Safe to call twice."""
        with _lock:
            sessions, self._sessions = self._sessions, []
            for sid in sessions:
                if _owners.get(sid) is self:
                    del _owners[sid]
        if sessions:
            kill_sessions(sessions)
        for hook in self.on_close:
            hook(sessions)


def kill_sessions(sessions: list[int]) -> None:
    """SIGKILL every process whose session id is in `sessions`. Without /proc, each session leader's group."""
    wanted = set(sessions)
    for _ in range(KILL_ROUNDS):
        pids = _pids()
        if pids is None:
            for sid in wanted:
                _signal(lambda: os.killpg(sid, signal.SIGKILL))
            return
        found = [pid for pid in pids if _session_of(pid) in wanted]
        for pid in found:
            _signal(lambda: os.kill(pid, signal.SIGKILL))
        if not found:
            return


def _pids() -> list[int] | None:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None


def _session_of(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def _signal(send: Callable[[], None]) -> None:
    try:
        send()
    except (ProcessLookupError, PermissionError):
        pass  # gone already, or not ours
