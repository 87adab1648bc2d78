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
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from leaf_cli.agent.sandbox import AgentSandbox, open_sandbox
from leaf_cli.errors import InfraError
from leaf_cli.llm.messages import ToolCall
from leaf_cli.tools import Workspace, run_tool_call
from leaf_cli.tools import bwrap as bwrap_module

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

PROBE = """
import socket, sys
for name in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(3)
    try:
        s.connect(name)
        print("reached", name)
    except OSError as exc:
        print("refused", name, exc.errno)
"""


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


@pytest.fixture
def host_folder() -> Iterator[Path]:
    """A folder on a host path outside /tmp and /run (where single sockets are covered one by one)."""
    folder = Path("/var/tmp") / f"leaf-race-{uuid.uuid4().hex[:8]}"
    try:
        folder.mkdir()
    except OSError:
        pytest.skip("cannot make a folder under /var/tmp here")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "probe.py").write_text(PROBE)
    return folder


def env_for(work: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(work), "LANG": "C.UTF-8"}


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
    """Starts of the command server's bwrap (Popen of an argv ending in `serve FD FD`) with `path`'s socket
    dropped just before bwrap runs: after the listing the argv came from, before bwrap's mounts."""

    def __init__(self, sock: socket.socket, path: Path) -> None:
        self.sock, self.path, self.starts, self.dropped_covered = sock, path, 0, False
        self._popen = subprocess.Popen

    def __call__(self, argv: Any, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        if isinstance(argv, list) and len(argv) > 3 and argv[-3] == "serve":
            self.starts += 1
            if self.starts == 1:
                self.dropped_covered = str(self.path) in argv  # the argv binds /dev/null over it
                drop(self.sock, self.path)
        return self._popen(argv, *args, **kwargs)


def test_a_socket_dropped_between_the_listing_and_bwrap_is_listed_again(work: Path, host_folder: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    gone_path, kept_path = host_folder / "gone.sock", host_folder / "kept.sock"
    kept = listen(kept_path)
    race = DropBeforeBwrap(listen(gone_path), gone_path)
    monkeypatch.setattr(subprocess, "Popen", race)
    box = open_box(work)
    try:
        assert race.dropped_covered and not gone_path.exists()  # the race took effect on the first start
        assert race.starts == 2  # one more start, from a fresh listing
        monkeypatch.undo()
        assert reached_from_host(kept_path)
        inside = bash(box, work, f"python3 probe.py {kept_path}")
        assert "reached" not in inside and f"refused {kept_path}" in inside, inside  # still covered after it
    finally:
        box.close()
        drop(kept, kept_path)


def test_a_start_that_keeps_failing_says_bwraps_own_reason(work: Path, host_folder: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A listing that always names a socket gone by bwrap's start: a bounded number of tries, then one line
    with bwrap's own error in it (before, the line guessed at namespaces)."""
    never = host_folder / "never-there.sock"
    listings: list[int] = []
    real = bwrap_module.listening_sockets

    def always_stale() -> list[Path]:
        listings.append(1)
        return [*real(), never]

    monkeypatch.setattr(bwrap_module, "listening_sockets", always_stale)
    with pytest.raises(InfraError) as caught:
        open_box(work)
    message = str(caught.value)
    assert "did not start" in message and f"Can't create file at {never}" in message, message
    assert "\n" not in message and "--sandbox none" in message
    assert 2 <= len(listings) <= 6  # it listed again, and gave up


def test_eval_runs_a_command_again_when_its_bwrap_lost_a_socket(tmp_path: Path, host_folder: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Graded tests run one bwrap per command (tasks/sandbox.py): a start that lost the race runs again from a
    fresh listing, and the command itself runs once."""
    from leaf_cli.tasks.sandbox import BwrapSandbox

    gone = host_folder / "gone.sock"
    real, listings = bwrap_module.listening_sockets, []

    def stale_once() -> list[Path]:
        listings.append(1)
        return [*real(), gone] if len(listings) == 1 else real()

    monkeypatch.setattr(bwrap_module, "listening_sockets", stale_once)
    counter = tmp_path / "runs"
    argv = ["bash", "-c", f"echo ran >> {counter}; echo done"]
    result = BwrapSandbox().run(argv, cwd=tmp_path, timeout=60, env={"PATH": os.environ["PATH"]},
                                writable=[tmp_path])
    assert len(listings) == 2  # the first argv covered the gone socket, and bwrap refused it
    assert result.ok and result.stdout == "done\n", result
    assert counter.read_text() == "ran\n"


def test_eval_never_runs_a_failing_command_twice(tmp_path: Path, host_folder: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A command's own exit 1 (even one that prints a bwrap-like line) is its result, not a start to redo."""
    from leaf_cli.tasks.sandbox import BwrapSandbox

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
