"""A command that ends its own shell (`kill -9 $$`, `exec true`, `exit 3` in a subshell chain) gets the
harness's observation, with the sandbox's command server and without a sandbox, and the episode goes on:
the next call works in the same sandbox, and a background job of an earlier call is still alive.

The expected text is FrogNano's harness (frognano/harness/leaf/tool_runner.py `_bash`) run here for real:
`subprocess.run(["/bin/bash", "-lc", command], stdout=PIPE, stderr=PIPE, universal_newlines=True)`, then
`Exit code: {returncode}\\nSTDOUT:\\n{stdout}\\nSTDERR:\\n{stderr}`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from leaf_cli.agent.sandbox import AgentSandbox, open_sandbox
from leaf_cli.llm.messages import ToolCall
from leaf_cli.tools import Workspace, run_tool_call

COMMANDS = [
    "echo out; echo err >&2; kill -9 $$",
    "echo before; exec true",
    "echo a; (echo b; (exit 3)) && echo never; (exit 3)",
    "echo term; kill -TERM $$",
    "( (kill -9 $$) ); echo after-subshell-kill",
]


def harness_observation(command: str, cwd: Path, env: dict[str, str]) -> str:
    """What FrogNano's harness showed for `command` (its `_bash`, without the truncation this never hits)."""
    done = subprocess.run(["/bin/bash", "-lc", command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, cwd=cwd, env=env, check=False)
    return f"Exit code: {done.returncode}\nSTDOUT:\n{done.stdout or ''}\nSTDERR:\n{done.stderr or ''}"


@pytest.fixture(params=["bwrap", "none"])
def episode(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Workspace, AgentSandbox]]:
    """A work tree, a clean HOME (no developer profile in `bash -l`), and the episode's sandbox."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
    box = open_sandbox(request.param, work, work, tmp_path / "state", env=env)
    ws = Workspace(work, env=env, bash_prefix=box.prefix)
    yield ws, box
    ws.end_episode()
    box.close()


def bash(ws: Workspace, command: str) -> str:
    return run_tool_call(ToolCall(id="t", name="Bash", arguments={"command": command}), ws).text


@pytest.mark.parametrize("command", COMMANDS)
def test_the_observation_is_the_harness_one(episode: tuple[Workspace, AgentSandbox], command: str) -> None:
    ws, _box = episode
    expected = harness_observation(command, ws.root, dict(ws.env or {}))
    assert expected.startswith("Exit code: ") and "Traceback" not in expected
    assert bash(ws, command) == expected


def test_kill_9_gives_exit_minus_9_and_the_episode_goes_on(episode: tuple[Workspace, AgentSandbox]) -> None:
    ws, box = episode
    started = bash(ws, "sleep 300 > /dev/null 2>&1 & echo $! > job.pid; echo started")
    assert started.startswith("Exit code: 0\nSTDOUT:\nstarted")
    assert bash(ws, "echo out; echo err >&2; kill -9 $$") == "Exit code: -9\nSTDOUT:\nout\n\nSTDERR:\nerr\n"
    assert bash(ws, "exec true") == "Exit code: 0\nSTDOUT:\n\nSTDERR:\n"
    # The same sandbox (its pid namespace: the job's pid means the same process) and the job still alive.
    alive = bash(ws, "kill -0 $(cat job.pid) && echo job-alive")
    assert alive == "Exit code: 0\nSTDOUT:\njob-alive\n\nSTDERR:\n"
    if box.kind == "bwrap":
        assert box.holder is not None and box.holder.poll() is None
