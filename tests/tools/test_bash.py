"""Bash: real subprocesses — output format, caps while streaming, timeouts that kill the whole group."""

from __future__ import annotations

import os
import signal
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from leaf_cli.tools import Workspace
from leaf_cli.tools.bash import BashArgs, timeout_seconds
from leaf_cli.tools.process import run_captured


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _gone(pid: int, within: float = 2.0) -> bool:
    end = time.monotonic() + within
    while _alive(pid) and time.monotonic() < end:
        time.sleep(0.02)
    return not _alive(pid)


def test_exit_code_and_both_streams(call) -> None:
    assert call("Bash", command="echo out; echo err >&2; exit 3") == "Exit code: 3\nSTDOUT:\nout\n\nSTDERR:\nerr\n"
    assert call("Bash", command="true") == "Exit code: 0\nSTDOUT:\n\nSTDERR:\n"
    assert call("bash", command="kill -9 $$") == "Exit code: -9\nSTDOUT:\n\nSTDERR:\n"


def test_runs_in_the_workdir_with_the_workspace_env(call, ws: Workspace) -> None:
    ws.env = {**(ws.env or {}), "LEAF_TEST_VAR": "hello"}
    assert call("Bash", command="pwd; echo $LEAF_TEST_VAR") == f"Exit code: 0\nSTDOUT:\n{ws.root}\nhello\n\nSTDERR:\n"


def test_prefix_wraps_the_command(call, ws: Workspace) -> None:
    ws.bash_prefix = ["env", "LEAF_WRAPPED=yes"]
    assert call("Bash", command="echo $LEAF_WRAPPED") == "Exit code: 0\nSTDOUT:\nyes\n\nSTDERR:\n"


def test_stdin_is_closed(call) -> None:
    started = time.monotonic()
    assert call("Bash", command='read x; echo "read=$? x=[$x]"', timeout=20) == (
        "Exit code: 0\nSTDOUT:\nread=1 x=[]\n\nSTDERR:\n")
    assert time.monotonic() - started < 10  # it did not sit waiting for input


def test_text_decoding_like_the_harness(call) -> None:
    # Invalid UTF-8 is replaced; \r\n and \r read as \n (the harness ran with universal_newlines=True).
    assert call("Bash", command=r"printf 'a\r\nb\rc\xff\n'") == "Exit code: 0\nSTDOUT:\na\nb\nc\ufffd\n\nSTDERR:\n"


def test_timeout_kills_child_and_grandchild(call, ws: Workspace) -> None:
    command = "echo started; (sleep 60 & echo $! > grandchild.pid; wait) & echo $! > child.pid; wait"
    assert call("Bash", command=command, timeout=1) == "Timed out after 1.0s\nSTDOUT:\nstarted\n\nSTDERR:\n"
    for name in ("child.pid", "grandchild.pid"):
        assert _gone(int((ws.root / name).read_text())), name


def test_background_child_holding_the_pipes_does_not_hang(call, ws: Workspace) -> None:
    started = time.monotonic()
    assert call("Bash", command="sleep 60 & echo $! > bg.pid; echo done", timeout=30) == (
        "Exit code: 0\nSTDOUT:\ndone\n\nSTDERR:\n")
    assert time.monotonic() - started < 10
    assert _gone(int((ws.root / "bg.pid").read_text()))


def test_keyboard_interrupt_kills_the_group(ws: Workspace) -> None:
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run_captured(["/bin/bash", "-c", "(sleep 60 & echo $! > gc.pid; wait) & wait"], ws.root, ws.env, 30, 100)
    timer.cancel()
    assert _gone(int((ws.root / "gc.pid").read_text()))


def test_a_stopped_command_gets_to_run_its_exit_trap(call, ws: Workspace) -> None:
    # SIGTERM before SIGKILL: a shell stopped by the timeout still cleans up (a lock file, a temp folder).
    out = call("Bash", command="trap 'touch cleaned' EXIT; sleep 30", timeout=1)
    assert out.startswith("Timed out after")
    assert (ws.root / "cleaned").exists()


def test_huge_output_is_capped_while_streaming(call) -> None:
    tracemalloc.start()
    out = call("Bash", command="head -c 50000000 /dev/zero | tr '\\0' x; echo tail >&2")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(out) <= 30_000
    head, rest = out.split("\nSTDERR:\n")
    assert rest == "tail\n"  # the flood on stdout does not hide stderr
    assert head.startswith("Exit code: 0\nSTDOUT:\nxxxx")
    kept = head.split("STDOUT:\n")[1].count("x")
    assert head.endswith(f"x\n[truncated {50_000_000 - kept} chars]")
    assert peak < 4 << 20  # 50 MB went through; only the head and one read at a time were held


def test_both_streams_flooding_share_the_budget(call) -> None:
    out = call("Bash", command="yes o | head -c 100000; yes e | head -c 100000 >&2")
    assert len(out) <= 30_000
    stdout, stderr = out.split("\nSTDERR:\n")
    assert "[truncated" in stdout and stderr.endswith(" chars]") and abs(len(stdout) - len(stderr)) < 40


def test_timeout_units_and_cap() -> None:
    def secs(**kw: float) -> float:
        return timeout_seconds(BashArgs(command="x", **kw), 120.0)

    assert secs() == 120.0
    assert secs(timeout=30) == 30.0
    assert secs(timeout=1000) == 600.0  # 1000 is still seconds, capped
    assert secs(timeout=5000) == 5.0  # over 1000: milliseconds
    assert secs(timeout_ms=2500) == 2.5
    assert secs(timeout=10, timeout_ms=1500) == 1.5  # timeout_ms wins, as in the harness
    assert secs(timeout=900) == 600.0
    assert secs(timeout=0) == 0.1


def test_default_timeout_comes_from_the_workspace(call, ws: Workspace) -> None:
    ws.bash_default_timeout = 0.5
    assert call("Bash", command="sleep 5").startswith("Timed out after 0.5s\n")


def test_empty_command(call) -> None:
    assert call("Bash", command="  ") == "ValueError: command is empty; pass the shell command to run"
