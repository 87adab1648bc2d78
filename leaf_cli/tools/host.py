"""The file tools inside the sandbox: a per-episode process that runs Read, Write, Edit and Glob there.

Bash already runs inside the sandbox; the file tools would run in leaf's own process on the host, where a
path check is all that stands between the agent and the user's files, and a symlink swapped between the
check and the open wins that race. So every sandboxed episode's workspace gets a `ToolHost`: `leaf eval`,
TaskPilot and RL (tasks/runner/attempt.py; unconfined, the tools use any path as FrogNano's harness did, its
sandbox being the container) and `leaf fix`, `leaf chat` and `leaf replay` (agent/sandbox.py; `--confined`,
the path policy of `leaf fix`, whose refusals then only explain what the sandbox would stop).
`python -m leaf_cli.tools.host [--confined] ROOT` is started under the sandbox's argv prefix at the
first file-tool call, fed one JSON line `{"name", "arguments"}` per call and answering one line
`{"text", "is_error"}` made by the same `registry.run_tool_call` on a `Workspace(ROOT)`, so the
observations are the in-process ones byte for byte, with the sandbox's file system under them (a write to
the read-only root is the OS's `[Errno 30] Read-only file system`). `Workspace.end_episode` ends it.

Bounded: each call has a timeout; a host that times out or dies is killed, the call's observation says so
(`TimeoutError: …` / `RuntimeError: …`) and the next call starts a fresh host. It never hangs the episode.
Under the `subprocess` sandbox backend (trusted code, tests) the prefix is empty and the host runs with no
isolation at all: there the unconfined tools reach the whole host, as that backend's Bash does.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable

import leaf_cli
from leaf_cli.tools import texts
from leaf_cli.tools.base import ToolResult

CALL_TIMEOUT = 300.0
"""Seconds one file-tool call may take in the host (a Glob over the whole root file system is the slow case)."""
START_TIMEOUT = 60.0
"""Seconds the host may take to start and answer its first call, on top of the call's own timeout."""
STOP_GRACE = 2.0
"""Seconds a host gets to exit after its stdin closes before its process group is killed."""
_MAX_LINE = 64 << 20
"""A reply longer than this is a broken host (observations are cut at 30,000 chars)."""


class HostFailure(Exception):
    """The host did not answer: timed out (`kind` TimeoutError) or ended (`kind` RuntimeError)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def leaf_root() -> Path:
    """The folder leaf's own package is imported from: the host must see it inside the sandbox (a checkout
    under /tmp, as an editable install in a CI clone is, is hidden there by the sandbox's private /tmp)."""
    return Path(leaf_cli.__file__).resolve().parent.parent


def host_argv(root: Path, *, confined: bool = False) -> list[str]:
    """The command that serves the file tools for `root`. `-P` keeps the work tree off `sys.path` (a task
    repository named `pydantic` must not replace leaf's), `-s` keeps the user's site packages out.
    `confined` gives the host `leaf fix`'s path policy (its refusals are then the in-process ones)."""
    return [sys.executable, "-P", "-s", "-m", "leaf_cli.tools.host", *(["--confined"] if confined else []), str(root)]


def host_env(home: str | None = None) -> dict[str, str]:
    """The host's environment: leaf's own package first on the path, nothing of the task's (its PYTHONPATH
    would import the task's modules in place of leaf's). `HOME` is the one Bash sees, for `~` paths."""
    env = {"PYTHONPATH": str(leaf_root()), "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if home:
        env["HOME"] = home
    return env


class ToolHost:
    """One episode's file-tool process: started lazily, restarted after a failure, ended by `close`."""

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float = CALL_TIMEOUT,
                 rebuild: Callable[[], list[str]] | None = None) -> None:
        """`rebuild` makes `argv` anew for each start (a bwrap argv covers the host's sockets as listed then)."""
        self.argv, self.env, self.cwd, self.timeout = list(argv), dict(env), Path(cwd), timeout
        self._rebuild = rebuild
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = b""
        self._answered = False
        self._lock = threading.Lock()
        self.starts = 0
        """How many host processes this episode started (a restart after a failure adds one)."""

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """The observation for one call, as the host made it; a host failure is an error observation."""
        request = json.dumps({"name": name, "arguments": arguments}).encode() + b"\n"
        with self._lock:
            try:
                reply = self._exchange(request)
            except HostFailure as exc:
                self._stop()
                return ToolResult(text=f"{exc.kind}: {exc}", is_error=True)
        return ToolResult(text=reply["text"], is_error=bool(reply["is_error"]))

    def close(self) -> None:
        """End the host (the episode-end hook). Safe to call twice; a later call starts a new host."""
        with self._lock:
            self._stop()

    def _exchange(self, request: bytes) -> dict[str, Any]:
        proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
        try:
            assert proc.stdin is not None
            proc.stdin.write(request)
            proc.stdin.flush()
        except OSError:
            raise HostFailure("RuntimeError", texts.HOST_ENDED.format(detail=self._ended_detail())) from None
        budget = self.timeout + (0.0 if self._answered else START_TIMEOUT)
        line = self._read_line(proc, time.monotonic() + budget, budget)
        try:
            reply = json.loads(line)
            if not isinstance(reply, dict) or not isinstance(reply.get("text"), str):
                raise ValueError("not an observation")
        except ValueError:
            raise HostFailure("RuntimeError", texts.HOST_ENDED.format(detail=" with a broken reply")) from None
        self._answered = True
        return reply

    def _start(self) -> subprocess.Popen[bytes]:
        self._stop()
        if self._rebuild is not None:
            self.argv = self._rebuild()
        self._stderr = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=self._stderr, start_new_session=True)
        except OSError as exc:
            raise HostFailure("RuntimeError", texts.HOST_ENDED.format(detail=f" at its start ({exc})")) from None
        self.starts += 1
        return self._proc

    def _read_line(self, proc: subprocess.Popen[bytes], deadline: float, budget: float) -> bytes:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise HostFailure("TimeoutError", texts.HOST_TIMEOUT.format(seconds=budget))
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise HostFailure("RuntimeError", texts.HOST_ENDED.format(detail=self._ended_detail()))
                self._buffer += chunk
                if len(self._buffer) > _MAX_LINE:
                    raise HostFailure("RuntimeError", texts.HOST_ENDED.format(detail=" with a broken reply"))
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _ended_detail(self) -> str:
        """` (exit code N: last stderr line)` for a host that ended, as far as it is known."""
        proc, code = self._proc, None
        if proc is not None:
            try:
                code = proc.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                pass
        last = ""
        if self._stderr is not None:
            self._stderr.seek(0)
            lines = self._stderr.read()[-4096:].decode("utf-8", "replace").strip().splitlines()
            last = f": {lines[-1]}" if lines else ""
        return f" (exit code {code}{last})" if code is not None else last

    def _stop(self) -> None:
        proc, self._proc, self._buffer, self._answered = self._proc, None, b"", False
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()  # a healthy host exits at end of input
                proc.wait(timeout=STOP_GRACE)
            except (OSError, subprocess.TimeoutExpired):
                pass
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # its own session: bwrap and all it started
                except ProcessLookupError:
                    pass
                proc.wait(timeout=STOP_GRACE)
            if proc.stdout is not None:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def serve(root: Path, inp: IO[bytes], out: IO[bytes], *, confined: bool = False) -> None:
    """Answer each request line on `inp` with an observation line on `out`, until end of input."""
    from leaf_cli.llm.messages import ToolCall
    from leaf_cli.tools.registry import run_tool_call
    from leaf_cli.tools.workspace import Workspace

    workspace = Workspace(root=root, confined=confined)
    for number, raw in enumerate(inp):
        request = json.loads(raw)
        call = ToolCall(id=f"host-{number}", name=request["name"], arguments=request["arguments"])
        result = run_tool_call(call, workspace)
        out.write(json.dumps({"text": result.text, "is_error": result.is_error}).encode() + b"\n")
        out.flush()


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    confined = args[:1] == ["--confined"]
    args = args[1:] if confined else args
    if len(args) != 1:
        print("usage: python -m leaf_cli.tools.host [--confined] ROOT", file=sys.stderr)
        return 2
    serve(Path(args[0]), sys.stdin.buffer, sys.stdout.buffer, confined=confined)
    return 0


if __name__ == "__main__":
    sys.exit(main())
