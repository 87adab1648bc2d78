"""A `leaf eval run … --ray local` driver SIGKILLed mid-run (a real subprocess with its own local Ray cluster),
then run again with `--resume`: no finished attempt is redone, and the summary equals an uninterrupted run's.

Its own module: the driver starts its own cluster, so this module starts none in the test process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.tasks.conftest import SECOND_BUG, SECOND_OK, leaf_cache, toolz_sdist, toolz_tasks  # noqa: F401

pytest.importorskip("ray")

pytestmark = pytest.mark.slow


def _script(path: Path, marker: Path) -> Path:
    """Every attempt sleeps while `marker` exists (so the driver can be killed with work in flight), then fixes
    second(). Without the marker the same turns run at full speed."""
    wait = {"name": "Bash", "arguments": {"command": f"[ -f {marker} ] && sleep 6; true"}}
    edit = {"name": "Edit", "arguments": {"file_path": "toolz/itertoolz.py", "old_string": SECOND_BUG,
                                          "new_string": SECOND_OK}}
    turns = [{"content": "", "tool_calls": [wait]}, {"content": "Fixing second().", "tool_calls": [edit]},
             {"content": "Done."}]
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path


def _command(tasks: Path, script: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "leaf_cli", "eval", "run", str(tasks), "--model", f"replay:{script}",
            "--out", str(out), "--sandbox", "subprocess", "--run-id", "r", "--attempts", "2", *extra]


def _rows(out: Path) -> list[dict]:
    path = out / "results.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _per_task(summary: dict) -> dict:
    return {key: summary[key] for key in ("n_tasks", "n_attempts", "resolved", "solve_rate", "pass_at_k",
                                          "infra_failures", "by_repo")}


def _verdicts(rows: list[dict]) -> dict[tuple[str, int], tuple]:
    return {(r["instance_id"], r["attempt"]): (r["resolved"], r["patch_applied"], r["f2p"], r["p2p"], r["exit_reason"])
            for r in rows}


def _session(pid: int) -> list[psutil.Process]:
    """Every live process of the session the driver leads (its Ray cluster included)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == pid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


def _kill_session(pid: int) -> list[psutil.Process]:
    """SIGKILL what is left of the session `pid` leads (bounded wait); returns what still lives after it."""
    for proc in _session(pid):
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(_session(pid), timeout=20)
    return _session(pid)


def test_a_sigkilled_ray_driver_resumes_without_redoing_finished_attempts(toolz_tasks, tmp_path: Path) -> None:  # noqa: F811
    tasks, _ = toolz_tasks
    marker = tmp_path / "slow"
    script = _script(tmp_path / "fix.jsonl", marker)
    env = {**os.environ, "RAY_DEDUP_LOGS": "0"}
    out = tmp_path / "ray"
    marker.write_text("")
    driver = subprocess.Popen(_command(tasks, script, out, "--ray", "local"), env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not _rows(out) and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        finished = _rows(out)
        assert driver.poll() is None, f"the driver ended before it was killed: {driver.stderr.read()[-2000:]}"
        assert 1 <= len(finished) < 6, "no attempt finished in time"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(timeout=30)
        left = _kill_session(driver.pid)  # the killed driver's raylet, GCS and workers must not linger
        driver.stderr.close()
    assert not left, f"processes of the killed driver's Ray cluster still run: {[p.pid for p in left]}"
    killed_lines = (out / "results.jsonl").read_text().splitlines()
    assert 1 <= len(killed_lines) < 6
    marker.unlink()

    resumed = subprocess.Popen(_command(tasks, script, out, "--ray", "local", "--resume"), env=env,
                               start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, err = resumed.communicate(timeout=300)
    finally:
        if resumed.poll() is None:
            resumed.kill()
            resumed.wait(timeout=30)
        _kill_session(resumed.pid)
    assert resumed.returncode == 0, err[-2000:]
    lines = (out / "results.jsonl").read_text().splitlines()
    assert lines[:len(killed_lines)] == killed_lines  # finished lines kept as they were
    rows = _rows(out)
    ids = [(r["instance_id"], r["attempt"]) for r in rows]
    assert len(ids) == len(set(ids)) == 6  # every attempt once: none of the finished ones redone

    plain = subprocess.run(_command(tasks, script, tmp_path / "plain", "--workers", "2"), env=env,
                           capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    reference = json.loads((tmp_path / "plain" / "summary.json").read_text())
    assert _per_task(summary) == _per_task(reference)
    assert _verdicts(rows) == _verdicts(_rows(tmp_path / "plain"))
    assert summary["executor"] == "ray" and summary["resolved"] == 2
