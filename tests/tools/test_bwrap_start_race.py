"""The episode's bwrap starts while the host's unix sockets come and go (CI's other xdist worker makes and drops
them all the time), and still covers every one that is there when it starts.

bwrap binds /dev/null over each listening socket of the host (tools/bwrap.py `host_socket_cover`). A socket
unlinked after it was listed leaves bwrap nothing to mount on (the root is read-only, so it cannot make the
file), and bwrap exits with "Can't create file at PATH": the sandbox "did not start". Two windows let that
happen: the listing was made once when the sandbox opened and reused by every later episode (chat's next
message, after end_episode), and the moment between a fresh listing and bwrap's mounts. Each test makes its
race happen for real, with real sockets outside /tmp and /run (there the sandbox covers folders whole) and
real bwrap, then shows the start succeeds and no socket of the host that existed at that start is reachable.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from leaf_cli.agent.sandbox import AgentSandbox, open_sandbox
from leaf_cli.errors import InfraError
from leaf_cli.llm.messages import ToolCall
from leaf_cli.tools import Workspace, run_tool_call
from leaf_cli.tools import bwrap as bwrap_module
from tests.support.socket_probe import env_for, host_folder, probe_folder

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")



def listen(path: Path) -> socket.socket:
    """A real listening unix socket of the host at `path` (a connect succeeds through the backlog)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(16)
    return sock


def drop(sock: socket.socket, path: Path) -> None:
    """What a server does at its end: close the socket and remove its name."""
    sock.close()
    path.unlink(missing_ok=True)


def reached_from_host(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as client:
        try:
            client.connect(str(path))
            return True
        except OSError:
            return False


@pytest.fixture(name="host_folder")
def var_tmp_folder() -> Iterator[Path]:
    """A folder on a host path outside /tmp and /run (where single sockets are covered one by one)."""
    yield from host_folder(Path("/var/tmp"))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return probe_folder(tmp_path)


def bash(box: AgentSandbox, work: Path, command: str) -> str:
    ws = Workspace(work, env=env_for(work), bash_prefix=box.prefix)
    return run_tool_call(ToolCall(id="t", name="Bash", arguments={"command": command}), ws).text


def open_box(work: Path) -> AgentSandbox:
    return open_sandbox("bwrap", work, work, work.parent / "state", env=env_for(work))


def test_a_socket_dropped_before_the_next_episode_does_not_stop_its_start(work: Path, host_folder: Path) -> None:
    """chat's next message restarts the sandbox (end_episode, ensure_started): it lists the sockets again."""
    path = host_folder / "short-lived.sock"
    server = listen(path)
    assert path in bwrap_module.listening_sockets()  # the first start covers it
    box = open_box(work)
    try:
        assert bash(box, work, "echo one") == "Exit code: 0\nSTDOUT:\none\n\nSTDERR:\n"
        box.end_episode()
        drop(server, path)  # the other worker's test ends while this episode is between messages
        assert not path.exists()
        box.ensure_started()
        assert bash(box, work, "echo two") == "Exit code: 0\nSTDOUT:\ntwo\n\nSTDERR:\n"
    finally:
        box.close()
        server.close()


def test_a_socket_bound_between_episodes_is_covered_in_the_next(work: Path, host_folder: Path) -> None:
    """The security side of the same listing: a socket the host bound after the sandbox opened, before the
    episode started, is covered in that episode."""
    box = open_box(work)
    path = host_folder / "later.sock"
    server = listen(path)
    try:
        box.end_episode()
        assert reached_from_host(path)  # the attack works from outside
        box.ensure_started()
        inside = bash(box, work, f"python3 probe.py {path}")
        assert "reached" not in inside and f"refused {path}" in inside, inside
    finally:
        box.close()
        drop(server, path)


class DropBeforeBwrap:
    """Starts of the command server's bwrap (Popen of an argv ending in `serve FD FD`), with the next of
    `servers`' sockets dropped just before each: after the listing the argv came from, before bwrap's mounts."""

    def __init__(self, servers: list[tuple[socket.socket, Path]]) -> None:
        self.servers, self.starts, self.covered = list(servers), 0, []
        self.argvs: list[list[str]] = []
        self._popen = subprocess.Popen

    def __call__(self, argv: Any, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        if isinstance(argv, list) and len(argv) > 3 and argv[-3] == "serve":
            self.starts += 1
            self.argvs.append(list(argv))
            if self.servers:
                sock, path = self.servers.pop(0)
                self.covered.append(str(path) in argv)  # the argv binds /dev/null over it
                drop(sock, path)
        return self._popen(argv, *args, **kwargs)


def test_a_socket_dropped_between_the_listing_and_bwrap_is_left_out_of_the_next_start(
        work: Path, host_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gone_path, kept_path = host_folder / "gone.sock", host_folder / "kept.sock"
    kept = listen(kept_path)
    race = DropBeforeBwrap([(listen(gone_path), gone_path)])
    monkeypatch.setattr(subprocess, "Popen", race)
    box = open_box(work)
    try:
        assert race.covered == [True] and not gone_path.exists()  # the race took effect on the first start
        # One more start without that cover. More than one only when the other xdist worker's tests drop a
        # socket of their own in between (the real race, which the retry is for); none has the gone one.
        assert race.starts >= 2 and not any(str(gone_path) in argv for argv in race.argvs[1:])
        monkeypatch.undo()
        assert reached_from_host(kept_path)
        inside = bash(box, work, f"python3 probe.py {kept_path} {gone_path}")
        assert "reached" not in inside and f"refused {kept_path}" in inside, inside  # still covered after it
    finally:
        box.close()
        drop(kept, kept_path)


def test_a_start_that_keeps_losing_the_race_gives_up_saying_why(work: Path, host_folder: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Each start loses another socket of the listing: a bounded number of starts, then one line with bwrap's
    own error in it (before, the line guessed at namespaces)."""
    from leaf_cli.tools.bwrap import COVER_TRIES as START_TRIES

    paths = [host_folder / f"s{i}.sock" for i in range(START_TRIES + 1)]
    race = DropBeforeBwrap([(listen(path), path) for path in paths])
    monkeypatch.setattr(subprocess, "Popen", race)
    with pytest.raises(InfraError) as caught:
        open_box(work)
    message = str(caught.value)
    assert race.starts == START_TRIES and all(race.covered), race.covered
    last = paths[START_TRIES - 1]
    assert message.startswith("the bwrap sandbox did not start: bwrap: ") and f"at {last}:" in message, message
    assert "\n" not in message and "--sandbox none" in message
    for sock, path in race.servers:
        drop(sock, path)


def test_a_start_bwrap_refuses_for_another_reason_says_it_at_once(work: Path, host_folder: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    race = DropBeforeBwrap([])  # only counts the starts
    monkeypatch.setattr(subprocess, "Popen", race)
    missing = host_folder / "gone-git-dir"  # a linked worktree's git dir that is not there: bwrap cannot bind it
    with pytest.raises(InfraError) as caught:
        open_sandbox("bwrap", work, work, work.parent / "state", env=env_for(work), git_dirs=(missing,))
    message = str(caught.value)
    assert race.starts == 1  # no socket's race: starting again would fail the same way
    assert message.startswith("the bwrap sandbox did not start: bwrap: ") and str(missing) in message, message
    assert "\n" not in message


def test_eval_runs_a_command_again_when_its_bwrap_lost_a_socket(tmp_path: Path, host_folder: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Graded tests run one bwrap per command (tasks/sandbox.py): a start that lost the race runs again
    without that cover, and the command itself runs once."""
    from leaf_cli.tasks.envs import sandbox as tasks_sandbox

    path = host_folder / "gone.sock"
    server = listen(path)
    runs: list[Any] = []

    def drop_first(argv: list[str], **kwargs: Any) -> Any:
        if not runs:
            assert str(path) in argv  # the listing covers it
            drop(server, path)
        runs.append(tasks_sandbox_run(argv, **kwargs))
        return runs[-1]

    tasks_sandbox_run = tasks_sandbox.run_process
    monkeypatch.setattr(tasks_sandbox, "run_process", drop_first)
    counter = tmp_path / "runs"
    argv = ["bash", "-c", f"echo ran >> {counter}; echo done"]
    result = tasks_sandbox.BwrapSandbox().run(argv, cwd=tmp_path, timeout=60, env={"PATH": os.environ["PATH"]},
                                              writable=[tmp_path])
    # the race took effect; a third start only when the other xdist worker's tests drop a socket in between
    assert len(runs) >= 2 and f"Can't create file at {path}" in runs[0].stderr, runs[0]
    assert result.ok and result.stdout == "done\n", result
    assert counter.read_text() == "ran\n"


def test_eval_never_runs_a_failing_command_twice(tmp_path: Path, host_folder: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A command's own exit 1 (even one that prints a bwrap-like line) is its result, not a start to redo."""
    from leaf_cli.tasks.envs.sandbox import BwrapSandbox

    counter = tmp_path / "runs"
    argv = ["bash", "-c", f"echo ran >> {counter}; echo 'bwrap: {host_folder}/x.sock' >&2; exit 1"]
    result = BwrapSandbox().run(argv, cwd=tmp_path, timeout=60, env={"PATH": os.environ["PATH"]},
                                writable=[tmp_path])
    assert result.returncode == 1 and counter.read_text() == "ran\n"


def test_the_file_tools_host_starts_again_after_a_socket_was_dropped(work: Path, host_folder: Path) -> None:
    """The file tools' host is a bwrap of its own, started again at the first file-tool call of each episode:
    from a fresh listing too."""
    path = host_folder / "short-lived.sock"
    server = listen(path)
    box = open_box(work)
    try:
        host = box.file_host(work, str(work))
        assert host is not None and str(path) in host.argv  # its first argv covers the socket
        assert not host.call("Read", {"file_path": str(work / "probe.py")}).is_error
        box.end_episode()  # the host ends with the episode
        drop(server, path)
        again = host.call("Read", {"file_path": str(work / "probe.py")})
        assert not again.is_error and "import socket" in again.text, again.text
        assert host.starts == 2 and str(path) not in host.argv
    finally:
        box.close()
        server.close()
