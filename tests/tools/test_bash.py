"""Bash: real subprocesses — output format, the cut while streaming, timeouts, and jobs that outlive a call."""

from __future__ import annotations

import os
import signal
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from leaf_cli.tools import Workspace
from leaf_cli.tools.bash import timeout_seconds
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
    # \r\n and \r read as \n (the harness ran with universal_newlines=True); bytes that are not UTF-8 made its
    # subprocess.run raise, so the observation is that error, positions counted in the whole stream.
    assert call("Bash", command=r"printf 'a\r\nb\rc\n'") == "Exit code: 0\nSTDOUT:\na\nb\nc\n\nSTDERR:\n"
    assert call("Bash", command=r"printf 'a\r\nb\rc\xff\n'") == (
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 6: invalid start byte")


def test_timeout_kills_the_command_and_the_episode_end_kills_its_children(call, ws: Workspace) -> None:
    # As subprocess.run did: the timeout kills the shell itself; what it started runs on until the episode ends.
    command = "echo started; (sleep 60 & echo $! > grandchild.pid; wait) & echo $! > child.pid; wait"
    assert call("Bash", command=command, timeout=1) == "Timed out after 1.0s\nSTDOUT:\nstarted\n\nSTDERR:\n"
    pids = [int((ws.root / name).read_text()) for name in ("child.pid", "grandchild.pid")]
    assert all(_alive(pid) for pid in pids)
    ws.end_episode()
    assert all(_gone(pid) for pid in pids)


def test_a_background_job_holding_the_pipes_keeps_the_call_until_its_timeout(call, ws: Workspace) -> None:
    started = time.monotonic()
    assert call("Bash", command="sleep 60 & echo $! > bg.pid; echo done", timeout=1) == (
        "Timed out after 1.0s\nSTDOUT:\ndone\n\nSTDERR:\n")
    assert time.monotonic() - started < 10
    job = int((ws.root / "bg.pid").read_text())
    assert _alive(job)
    ws.end_episode()
    assert _gone(job)


def test_a_server_started_in_one_call_answers_the_next(call, ws: Workspace) -> None:
    import socket
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (ws.root / "index.html").write_text("hello from the server\n")
    start = f"{sys.executable} -m http.server {port} --bind 127.0.0.1 > server.log 2>&1 & echo $! > server.pid"
    began = time.monotonic()
    assert call("Bash", command=start) == "Exit code: 0\nSTDOUT:\n\nSTDERR:\n"
    assert time.monotonic() - began < 10  # its output goes to a file: the call returns at once
    client = ("import time, urllib.request as u\n"
              "for _ in range(200):\n"
              "    try:\n"
              f"        print(u.urlopen('http://127.0.0.1:{port}/index.html').read().decode(), end=''); break\n"
              "    except OSError:\n"
              "        time.sleep(0.1)\n")
    (ws.root / "client.py").write_text(client)
    fetch = f"{sys.executable} client.py"
    assert call("Bash", command=fetch, timeout=60) == "Exit code: 0\nSTDOUT:\nhello from the server\n\nSTDERR:\n"
    server = int((ws.root / "server.pid").read_text())
    assert _alive(server) and ws.jobs.sessions
    ws.end_episode()
    assert _gone(server) and not ws.jobs.sessions


def test_late_output_of_a_job_is_not_cut(call, ws: Workspace) -> None:
    call("Bash", command="(sleep 1; echo late >> out.log) > /dev/null 2>&1 & echo $! > job.pid")
    job = int((ws.root / "job.pid").read_text())
    assert _gone(job, within=10)
    assert (ws.root / "out.log").read_text() == "late\n"


def test_keyboard_interrupt_kills_the_group(ws: Workspace) -> None:
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run_captured(["/bin/bash", "-c", "(sleep 60 & echo $! > gc.pid; wait) & wait"], ws.root, ws.env, 30, 100)
    timer.cancel()
    assert _gone(int((ws.root / "gc.pid").read_text()))


def test_keyboard_interrupt_stops_a_bash_call_and_its_group(ws: Workspace) -> None:
    from leaf_cli.tools.process import run_command

    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run_command(["/bin/bash", "-c", "trap 'touch cleaned' EXIT; (sleep 60 & echo $! > gc.pid; wait) & wait"],
                    ws.root, ws.env, 30, 100, ws.jobs.add)
    timer.cancel()
    assert _gone(int((ws.root / "gc.pid").read_text()))
    assert (ws.root / "cleaned").exists()  # SIGTERM first: the shell ran its EXIT trap


def test_huge_output_is_cut_as_one_text_while_streaming(call) -> None:
    tracemalloc.start()
    out = call("Bash", command="head -c 50000000 /dev/zero | tr '\\0' x; echo tail >&2")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    head = "Exit code: 0\nSTDOUT:\n"
    total = len(head) + 50_000_000 + len("\nSTDERR:\n") + len("tail\n")
    assert out == head + "x" * (30_000 - len(head)) + f"\n[truncated {total - 30_000} chars]"
    assert peak < 4 << 20  # 50 MB went through; only the heads and one read at a time were held


def test_both_streams_flooding_cut_as_the_harness_cut(call) -> None:
    out = call("Bash", command="yes o | head -c 100000; yes e | head -c 100000 >&2")
    head = "Exit code: 0\nSTDOUT:\n"
    total = len(head) + 100_000 + len("\nSTDERR:\n") + 100_000
    assert out == head + ("o\n" * 15_000)[:30_000 - len(head)] + f"\n[truncated {total - 30_000} chars]"


def test_timeout_units() -> None:
    from leaf_cli.tools.args import CallArgs

    def secs(ceiling: float | None = None, **kw: object) -> float:
        return timeout_seconds(CallArgs({"command": "x", **kw}), 120.0, ceiling)

    assert secs() == 120.0
    assert secs(timeout=30) == 30.0
    assert secs(timeout=1000) == 1000.0  # 1000 is still seconds; no ceiling, as in the harness
    assert secs(timeout=5000) == 5.0  # over 1000: milliseconds
    assert secs(timeout_ms=2500) == 2.5
    assert secs(timeout=10, timeout_ms=1500) == 1.5  # timeout_ms wins, as in the harness
    assert secs(timeout=0) == 0.1
    assert secs(timeout="7") == 7.0
    assert secs(timeout=float("nan")) == 0.1  # max(0.1, nan) is 0.1, there too
    assert secs(600.0, timeout=900) == 600.0  # a workspace may set a ceiling
    with pytest.raises(OverflowError):
        secs(timeout=float("inf"))


def test_default_timeout_comes_from_the_workspace(call, ws: Workspace) -> None:
    ws.bash_default_timeout = 0.5
    assert call("Bash", command="sleep 5").startswith("Timed out after 0.5s\n")


def test_empty_command(call) -> None:
    assert call("Bash", command="") == "ValueError: command is required"
    assert call("Bash", command="  ") == "Exit code: 0\nSTDOUT:\n\nSTDERR:\n"  # bash runs it, as there
