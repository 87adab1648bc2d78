"""Run a command with a deadline and stream its output into bounded buffers.

`run_captured` (graded tests, the r2e tools) leaves no process behind when it returns; `run_command` (the
Leaf Bash tool) runs a command as FrogNano's harness did, whose background jobs outlive the call.

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
from typing import Callable

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


def _spawn(argv: list[str], cwd: Path, env: dict[str, str] | None) -> tuple[subprocess.Popen[bytes], selectors.BaseSelector]:
    """Start `argv` in a session of its own, stdin closed, and a selector watching both of its pipes."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None
    selector = selectors.DefaultSelector()
    for pipe in (proc.stdout, proc.stderr):
        selector.register(pipe.fileno(), selectors.EVENT_READ)
    return proc, selector


def run_captured(argv: list[str], cwd: Path, env: dict[str, str] | None, timeout: float, cap: int) -> Captured:
    """Run `argv` in `cwd` for at most `timeout` seconds; its whole process group is killed when it ends.

    Killing the group on every path (normal exit, timeout, KeyboardInterrupt) means no background child
    outlives the call; a daemon that starts its own session is out of reach, and the pipes it holds are
    abandoned after DRAIN_GRACE rather than waited on.
    """
    started = time.monotonic()
    proc, selector = _spawn(argv, cwd, env)
    out, err = _Stream(cap), _Stream(cap)
    streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
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


def _pump(pid: int | None, selector: selectors.BaseSelector, streams: dict[int, _Stream] | dict[int, Decoded],
          deadline: float) -> bool:
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


class Decoded:
    """One pipe of a Bash call, decoded both ways FrogNano's harness decoded it.

    `text`: strict UTF-8 with `\\r\\n` and `\\r` read as `\\n` (subprocess text mode, used when the command
    finished); `error` is the first decoding failure, worded as Python words it, with its byte position in
    the whole stream. `loose`: invalid bytes replaced and newlines untouched (what a timed-out call showed).
    Both keep only their first `cap` chars and count the rest.
    """

    def __init__(self, cap: int) -> None:
        self.text = HeadBuffer(cap)
        self.loose = HeadBuffer(cap)
        self.error: str | None = None
        self._strict = codecs.getincrementaldecoder("utf-8")("strict")
        self._newlines = io.IncrementalNewlineDecoder(None, translate=True)
        self._replace = codecs.getincrementaldecoder("utf-8")("replace")
        self._fed = 0

    def feed(self, data: bytes, final: bool = False) -> None:
        self.loose.add(self._replace.decode(data, final))
        if self.error is None:
            base = self._fed - len(self._strict.getstate()[0])  # where the decoder's input starts in the stream
            try:
                self.text.add(self._newlines.decode(self._strict.decode(data, final), final))
            except UnicodeDecodeError as exc:
                self.error = _decode_error(exc, base)
        self._fed += len(data)


def _decode_error(exc: UnicodeDecodeError, base: int) -> str:
    """CPython's message for `exc`, with positions counted from the start of the stream."""
    start, end = base + exc.start, base + exc.end
    if exc.end - exc.start == 1:
        return f"'{exc.encoding}' codec can't decode byte 0x{exc.object[exc.start]:02x} in position {start}: {exc.reason}"
    return f"'{exc.encoding}' codec can't decode bytes in position {start}-{end - 1}: {exc.reason}"


@dataclass
class Ran:
    """A Bash call's outcome: exit status (None when it timed out) and both pipes."""

    returncode: int | None
    stdout: Decoded
    stderr: Decoded

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run_command(argv: list[str], cwd: Path, env: dict[str, str] | None, timeout: float, cap: int,
                register: Callable[[int], None]) -> Ran:
    """Run `argv` as FrogNano's harness ran Bash (`subprocess.run(..., timeout=...)`), in a session of its own.

    The call lasts until both pipes close and the command has exited, or until `timeout`: a background job
    that keeps the pipes open makes it wait, one that redirects its output lets it return and keeps running
    (its session goes to `register`, and the episode's end kills it). On timeout only the command itself is
    killed, as there; on Ctrl-C or any other exception, its whole group, before the exception goes on.
    """
    proc, selector = _spawn(argv, cwd, env)
    register(proc.pid)
    out, err = Decoded(cap), Decoded(cap)
    pipes = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    deadline = time.monotonic() + timeout
    try:
        timed_out = _pump(None, selector, pipes, deadline) or _wait(proc, deadline)
        if timed_out:
            proc.kill()
    except BaseException:
        kill_process_group(proc.pid, graceful=True)
        raise
    finally:
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
        proc.wait()
    out.feed(b"", final=True)
    err.feed(b"", final=True)
    return Ran(None if timed_out else proc.returncode, out, err)
