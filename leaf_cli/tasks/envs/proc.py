"""Run one command with a timeout; on timeout its whole process group dies. Output is kept bounded."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

from leaf_cli.tools.process import kill_process_group

OUTPUT_TAIL = 20_000
"""Characters of output kept per stream: enough to diagnose, bounded whatever the command prints."""


class RunResult(BaseModel):
    """What a command did: its exit code (None when killed on timeout), output tails, seconds."""

    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def run_process(argv: list[str], *, cwd: Path, timeout: float, env: dict[str, str] | None = None,
                stdin: str | None = None, keep: int | None = OUTPUT_TAIL) -> RunResult:
    """Run `argv` in its own session; kill the process group on timeout. Output goes through temp files
    so memory stays flat however much the command prints; only the last `keep` characters of each stream
    are returned (`keep=None`: all of it, for output leaf itself needs whole, such as a git diff)."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True,
                                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        timed_out = False
        try:
            proc.communicate(input=stdin.encode() if stdin is not None else None, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
        finally:
            if proc.poll() is None:  # interrupted (KeyboardInterrupt): never leave the group behind
                _kill_group(proc)
        return RunResult(argv=argv, returncode=None if timed_out else proc.returncode, stdout=_tail(out, keep),
                         stderr=_tail(err, OUTPUT_TAIL), seconds=round(time.monotonic() - start, 3), timed_out=timed_out)


def _kill_group(proc: subprocess.Popen) -> None:
    kill_process_group(proc.pid, graceful=True)
    proc.wait()


def _tail(handle, keep: int | None) -> str:  # noqa: ANN001 - a binary temp file
    size = handle.seek(0, os.SEEK_END)
    handle.seek(0 if keep is None else max(0, size - keep * 4))
    text = handle.read().decode("utf-8", errors="replace")
    return text if keep is None else text[-keep:]
