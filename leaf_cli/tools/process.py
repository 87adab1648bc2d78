"""Run a command with a deadline, stream its output into bounded buffers, and leave no process behind.

The command gets its own session (so its process group can be killed as one), stdin from /dev/null (so a
prompt cannot hang it), and both pipes are read as the output arrives with a selector: only the first
`cap` chars of each stream are kept, the rest is decoded just to be counted, so memory stays flat however
much it prints.
"""

from __future__ import annotations

import codecs
import io
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from leaf_cli.tools.output import HeadBuffer

READ_BYTES = 1 << 16
TICK = 0.05
"""While the pipes stay open, how often to look whether the command itself has exited."""
EXIT_GRACE = 0.5
"""After the command exits, how long its background children may keep its pipes open before being killed."""
DRAIN_GRACE = 0.5
"""After the kill, how long to read what is left in the pipes (a child that left the session may hold them)."""


class _Stream:
    """One pipe: bytes in, UTF-8 text out (invalid bytes replaced, `\\r\\n` and `\\r` read as `\\n`)."""

    def __init__(self, cap: int) -> None:
        self.buffer = HeadBuffer(cap)
        self._decoder = io.IncrementalNewlineDecoder(codecs.getincrementaldecoder("utf-8")("replace"), translate=True)

    def feed(self, data: bytes, final: bool = False) -> None:
        self.buffer.add(self._decoder.decode(data, final=final))


@dataclass
class Captured:
    """What a run left: exit status (None when it timed out) and the kept heads and total lengths of its output."""

    returncode: int | None
    timed_out: bool
    stdout: HeadBuffer
    stderr: HeadBuffer
    seconds: float


def run_captured(argv: list[str], cwd: Path, env: dict[str, str] | None, timeout: float, cap: int) -> Captured:
    """Run `argv` in `cwd` for at most `timeout` seconds; its whole process group is killed when it ends.

    Killing the group on every path (normal exit, timeout, KeyboardInterrupt) means no background child
    outlives the call; a daemon that starts its own session is out of reach, and the pipes it holds are
    abandoned after DRAIN_GRACE rather than waited on.
    """
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Stream(cap), _Stream(cap)
    streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    selector = selectors.DefaultSelector()
    for fd in streams:
        selector.register(fd, selectors.EVENT_READ)
    timed_out = True
    try:
        timed_out = _pump(proc.pid, selector, streams, started + timeout)
        if not timed_out:
            timed_out = _wait(proc, started + timeout)
    finally:
        # timed_out is still True when an exception (Ctrl-C) left the loop: stop those gracefully too.
        kill_process_group(proc.pid, graceful=timed_out)
        _pump(None, selector, streams, time.monotonic() + DRAIN_GRACE)
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
        proc.wait()
    out.feed(b"", final=True)
    err.feed(b"", final=True)
    return Captured(None if timed_out else proc.returncode, timed_out, out.buffer, err.buffer,
                    time.monotonic() - started)


def _pump(pid: int | None, selector: selectors.BaseSelector, streams: dict[int, _Stream], deadline: float) -> bool:
    """Read both pipes until they close, `deadline` passes (returns True), or `pid` has exited and EXIT_GRACE
    has passed with its children still holding the pipes (returns False)."""
    exited_at: float | None = None
    while selector.get_map():
        now = time.monotonic()
        if now >= deadline:
            return True
        if exited_at is None and pid is not None and _exited(pid):
            exited_at = now
        if exited_at is not None and now >= exited_at + EXIT_GRACE:
            return False
        wait = deadline - now if pid is None else min(deadline - now, TICK)
        for key, _ in selector.select(wait):
            data = os.read(key.fd, READ_BYTES)
            if data:
                streams[key.fd].feed(data)
            else:
                selector.unregister(key.fd)
    return False


def _exited(pid: int) -> bool:
    """Whether `pid` has exited, without reaping it: while it is a zombie its process group id cannot be reused."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _wait(proc: subprocess.Popen[bytes], deadline: float) -> bool:
    """Wait for the command after its pipes closed (it may have closed them early); True when time ran out."""
    pause = 0.001  # the pipes usually close as the command exits: look again soon, then back off
    while not _exited(proc.pid):
        if time.monotonic() >= deadline:
            return True
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(pause * 2, TICK)
    return False


TERM_GRACE = 0.5
"""Seconds a timed-out or interrupted command gets between SIGTERM and SIGKILL."""


def kill_process_group(pgid: int, graceful: bool = False) -> None:
    """Kill every process of the group. `graceful` sends SIGTERM first and SIGKILL after TERM_GRACE (or as soon
    as the leader is gone): shells then run their EXIT traps, so a command stopped mid-way does not leave lock
    files behind (pyenv's rehash lock in a login shell's profile is the case seen here). A command that ended
    by itself only has stray background children left, and those get SIGKILL at once."""
    try:
        if graceful:
            os.killpg(pgid, signal.SIGTERM)
            deadline = time.monotonic() + TERM_GRACE
            while not _exited(pgid) and time.monotonic() < deadline:
                time.sleep(0.01)
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already empty
