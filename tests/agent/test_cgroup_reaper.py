"""Without a sandbox, a fork-and-exit chain (a new session each generation) escapes the session kill and can
outrun the reaper's scans of /proc; the run's cgroup ends it. Real processes, the real Bash tool, the real cgroup v2 hierarchy (skipped
where leaf cannot make a cgroup here, and then the warning says so: that test always runs)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import pytest

from leaf_cli.agent import cgroup as cgroup_module
from leaf_cli.agent.cgroup import RunCgroup
from leaf_cli.agent.reaper import Reaper
from leaf_cli.agent.sandbox import AgentSandbox, open_sandbox
from leaf_cli.cli.fix_session import hook_episode_end, open_agent_sandbox
from leaf_cli.llm.messages import ToolCall
from leaf_cli.tools import Workspace, run_tool_call

# Each generation forks, the parent exits at once, the child takes a new session, leaves a mark and goes on.
# It stops by itself when `stop` exists, so a failing test leaves nothing burning the CPU. A generation waits
# 10 ms: at full speed (tens of microseconds a generation, faster than one of the reaper's scans) every exited
# parent is a zombie until its subreaper or init reaps it, and a CI run saw the 32,768 pids of the machine
# exhausted, failing the other worker's tests. What these tests show does not depend on the speed: a new
# session each generation escapes the session kill, and the cgroup's kill ends the chain at any speed.
CHAIN_C = r"""
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    for (;;) {
        if (access(argv[2], F_OK) == 0) return 0;
        if (fork()) _exit(0);
        setsid();
        int fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT, 0600);
        write(fd, "x", 1);
        close(fd);
        usleep(10000);
    }
}
"""
CHAINS = 2
"""Chains started at once: the reaper may catch one now and then, rarely all of them."""


def _probe() -> RunCgroup | None:
    group = RunCgroup.create()
    if group is not None:
        group.remove()
    return group


needs_cgroup = pytest.mark.skipif(not sys.platform.startswith("linux") or _probe() is None,
                                  reason="no writable cgroup v2 here")


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "chain.c").write_text(CHAIN_C)
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the fork chain")
    subprocess.run([cc, "-O2", "-o", str(folder / "chain"), str(folder / "chain.c")], check=True)
    yield folder
    (folder / "stop").touch()


def bash(ws: Workspace, command: str) -> str:
    return run_tool_call(ToolCall(id="t", name="Bash", arguments={"command": command}), ws).text


def start_chains(ws: Workspace, trial: int = 0) -> list[Path]:
    markers = [ws.root / f"mark{trial}-{i}" for i in range(CHAINS)]
    command = " ".join(f"./chain {m.name} stop > /dev/null 2>&1 &" for m in markers)
    assert bash(ws, command).startswith("Exit code: 0")
    assert growing(markers)  # the chains run
    return markers


def growing(markers: list[Path], wait: float = 0.3) -> bool:
    """Whether any chain still leaves marks (looked at over `wait` seconds, after a moment to settle)."""
    time.sleep(0.1)
    before = [m.stat().st_size if m.exists() else 0 for m in markers]
    time.sleep(wait)
    return [m.stat().st_size if m.exists() else 0 for m in markers] != before


def workspace(work: Path, box: AgentSandbox) -> Workspace:
    return Workspace(work, env={"PATH": os.environ["PATH"], "HOME": str(work), "LANG": "C.UTF-8"},
                     bash_prefix=box.prefix)


@needs_cgroup
def test_the_chain_outlives_the_session_kill(work: Path) -> None:
    """The attack takes effect: killing the Bash sessions' process groups, the first of the old defences,
    leaves every chain running, since each generation takes a new session. (Whether the reaper's 20 rounds
    over /proc catch a chain as well is a race the chain usually wins under load and often loses on a quiet
    machine, so no test asserts it; the cgroup's kill below and in the next tests does not race.) The chains
    run in a cgroup here only so that this test can end them."""
    group = RunCgroup.create()
    assert group is not None
    box = AgentSandbox("none", group.prefix(), cgroup=group)
    ws = workspace(work, box)
    try:
        markers = start_chains(ws)
        ws.jobs.close()  # the Bash sessions and their process groups
        assert growing(markers), "the chains were expected to outlive the session kill"
        group.kill()
        assert not growing(markers)  # what the session kill left, the cgroup's kill ended
    finally:
        group.kill()


@needs_cgroup
def test_the_runs_cgroup_ends_the_chain(work: Path) -> None:
    box = open_sandbox("none", work, work, work.parent / "state")
    assert box.cgroup is not None and box.prefix == box.cgroup.prefix()
    ws = workspace(work, box)
    reaper = Reaper.start(watch=False)
    hook_episode_end(ws, reaper, box)  # as `leaf fix` wires the episode's end
    try:
        markers = start_chains(ws)
        assert len(box.cgroup.pids()) >= CHAINS  # the chains are in the run's cgroup, whatever session they took
        ws.end_episode()
        assert not growing(markers)
        assert box.cgroup.pids() == []
        assert bash(ws, "echo again").startswith("Exit code: 0")  # a later episode of the run still runs
    finally:
        reaper.stop()
        path = box.cgroup.path
        box.close()
    assert not path.exists()


@needs_cgroup
def test_a_killed_leafs_cgroup_is_emptied_by_the_next_run(tmp_path: Path) -> None:
    """leaf killed with -9 cannot end its cgroup; the next run finds it by the dead pid in its name."""
    probe = RunCgroup.create()
    assert probe is not None
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = RunCgroup(probe.path.with_name(f"leaf-run-{dead.pid}-deadbeef"))
    probe.remove()
    stale.path.mkdir()
    left = subprocess.Popen([*stale.prefix(), "sleep", "300"], start_new_session=True)
    try:
        deadline = time.monotonic() + 5
        while not stale.pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stale.pids() == [left.pid]  # what the killed run left, still running
        fresh = RunCgroup.create()
        assert fresh is not None
        assert left.wait(timeout=5) == -9 and not stale.path.exists()
        fresh.remove()
    finally:
        if left.poll() is None:
            left.kill()
        stale.remove()


def test_without_a_cgroup_the_warning_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cgroup_module, "_mount", lambda: None)  # as on a machine without cgroup v2
    settings = SimpleNamespace(sandbox="none", network=False, pass_env=[], sandbox_home=[])
    box = open_agent_sandbox(settings, tmp_path, tmp_path)
    assert box.kind == "none" and box.cgroup is None and box.prefix == []
    warning = capsys.readouterr().err
    assert "--sandbox none" in warning and "No cgroup v2 is writable by leaf here" in warning
    assert "keep running after leaf exits" in warning
    box.close()


@needs_cgroup
def test_with_a_cgroup_the_warning_says_all_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = SimpleNamespace(sandbox="none", network=False, pass_env=[], sandbox_home=[])
    box = open_agent_sandbox(settings, tmp_path, tmp_path)
    try:
        assert box.cgroup is not None
        assert "cgroup of the run's own" in capsys.readouterr().err
    finally:
        box.close()


LEAF_STAND_IN = """
import subprocess, sys, time
from pathlib import Path
from leaf_cli.agent.reaper import Reaper
from leaf_cli.agent.sandbox import open_sandbox
work = sys.argv[1]
box = open_sandbox("none", Path(work), Path(work), Path(work) / "state")
reaper = Reaper.for_sandbox(box)
subprocess.run([*box.prefix, "/bin/bash", "-c", "./chain mark stop > /dev/null 2>&1 &"], cwd=work, check=True)
print(box.cgroup.path, flush=True)
time.sleep(300)
"""


@needs_cgroup
def test_the_watchdog_ends_the_cgroup_when_leaf_is_killed(work: Path) -> None:
    """leaf killed with -9 mid-episode: its watchdog kills the run's cgroup, the chain with it."""
    leaf = subprocess.Popen([sys.executable, "-c", LEAF_STAND_IN, str(work)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert leaf.stdout is not None
    group = RunCgroup(Path(leaf.stdout.readline().strip()))
    try:
        marker = work / "mark"
        assert growing([marker]) and group.pids()  # the chain runs, in the run's cgroup
        leaf.kill()
        leaf.wait()
        assert not growing([marker], wait=0.5)
        assert not group.path.exists()
    finally:
        if leaf.poll() is None:
            leaf.kill()
        if group.path.exists():
            group.remove()
