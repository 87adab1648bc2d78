"""Nothing of the host side is reachable from inside the bwrap sandbox: not the command server's socket
name (the client's path is the host's), not a unix socket at a host path (/run's services, a socket
elsewhere on a read-only path), not an abstract socket of the host with the network on.

Each attack runs for real against real socket servers on the host: first it is shown to work where it
would (from the host, or with `--sandbox none`), then the sandbox is shown to reach nothing.
"""

from __future__ import annotations

import socket
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from leaf_cli.agent.sandbox import AgentSandbox, open_sandbox
from leaf_cli.llm.messages import ToolCall
from leaf_cli.tasks.envs.sandbox import BwrapSandbox
from leaf_cli.tools import Workspace, run_tool_call
from tests.support.socket_probe import env_for, host_folder, probe_folder



class Listener:
    """A real unix socket server on the host (a path, or an abstract name `@…`), counting who connects."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(name.replace("@", "\0", 1) if name.startswith("@") else name)
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    self.received.append(conn.recv(1 << 16))
                except OSError:
                    self.received.append(b"")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()
        if not self.name.startswith("@"):
            Path(self.name).unlink(missing_ok=True)


def bash(ws: Workspace, command: str) -> str:
    return run_tool_call(ToolCall(id="t", name="Bash", arguments={"command": command}), ws).text


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return probe_folder(tmp_path)


@pytest.fixture
def episode(work: Path) -> Iterator[tuple[Workspace, AgentSandbox]]:
    box = open_sandbox("bwrap", work, work, work.parent / "state", env=env_for(work))
    ws = Workspace(work, env=env_for(work), bash_prefix=box.prefix)
    yield ws, box
    ws.end_episode()
    box.close()


@pytest.fixture
def run_folder() -> Iterator[Path]:
    yield from host_folder(Path("/run"))


@pytest.fixture
def var_tmp_folder() -> Iterator[Path]:
    yield from host_folder(Path("/var/tmp"))


def test_a_symlink_in_the_private_tmp_does_not_redirect_the_client(episode: tuple[Workspace, AgentSandbox],
                                                                   tmp_path: Path) -> None:
    ws, box = episode
    decoy = Listener(str(tmp_path / "decoy.sock"))  # host /tmp: hidden inside, but a host-side client sees it
    try:
        control = Path(box.prefix[-2]).parent
        # Every socket the agent can find in its /tmp, the old name, and the host's name of the control folder.
        swap = (f"for s in $(find /tmp -type s) /tmp/.leaf/sock; do rm -f $s; ln -s {decoy.name} $s; done; "
                f"mkdir -p {control} && ln -sf {decoy.name} {control}/sock; ls {control}")
        assert bash(ws, swap).startswith("Exit code: 0")
        planted = box.tmp_dir / ".leaf" / "sock"
        assert planted.is_symlink()  # the swap took effect in the host's copy of the agent's /tmp
        with socket.socket(socket.AF_UNIX) as c:  # and a client that connects by that name reaches the decoy
            c.connect(str(planted))
            c.sendall(b"as the old client would")
        threading.Event().wait(0.3)
        assert decoy.received == [b"as the old client would"]
        assert bash(ws, "echo still-here") == "Exit code: 0\nSTDOUT:\nstill-here\n\nSTDERR:\n"
        threading.Event().wait(0.3)
        assert decoy.received == [b"as the old client would"]  # the command went to the episode's server only
        assert (control / "sock").is_socket() and not (control / "sock").is_symlink()
        assert not control.is_relative_to(box.tmp_dir)
    finally:
        decoy.close()


def test_host_sockets_at_host_paths_are_out_of_reach(work: Path, run_folder: Path, var_tmp_folder: Path) -> None:
    """/run's services, and a socket on another read-only host path that was listening when the sandbox
    started (a socket bound later outside /run and /tmp is not covered: no Landlock right for pathname
    sockets on kernels of this generation, see sandbox_shell._landlock_scope)."""
    servers = [Listener(str(run_folder / "bus")), Listener(str(var_tmp_folder / "agent.sock"))]
    names = " ".join(s.name for s in servers)
    box = open_sandbox("bwrap", work, work, work.parent / "state", env=env_for(work))
    ws = Workspace(work, env=env_for(work), bash_prefix=box.prefix)
    try:
        plain = Workspace(work, env=env_for(work))  # --sandbox none: the attack works
        reached = bash(plain, f"python3 probe.py {names}")
        assert reached.count("reached ") == 2, reached
        inside = bash(ws, f"python3 probe.py {names}; ls -A /run")
        assert "reached" not in inside and inside.count("refused ") == 2, inside
        # eval's sandbox (one bwrap per command) builds on the same argv
        argv = BwrapSandbox().wrap(["python3", str(work / "probe.py"), *names.split()], cwd=work, writable=[work])
        graded = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert "reached" not in graded.stdout and graded.stdout.count("refused ") == 2, graded
        threading.Event().wait(0.3)
        assert [len(s.received) for s in servers] == [1, 1]  # only the unsandboxed probe's connections
    finally:
        ws.end_episode()
        box.close()
        for server in servers:
            server.close()


def test_an_abstract_host_socket_is_refused_with_the_network_on(work: Path) -> None:
    server = Listener(f"@leaf-test-{uuid.uuid4().hex[:8]}")
    box = open_sandbox("bwrap", work, work, work.parent / "state", env=env_for(work), network=True)
    ws = Workspace(work, env=env_for(work), bash_prefix=box.prefix)
    try:
        if not box.scope.startswith("landlock"):
            pytest.skip(f"no Landlock scoping on this kernel ({box.scope})")
        assert "reached" in bash(Workspace(work, env=env_for(work)), f"python3 probe.py {server.name}")
        inside = bash(ws, f"python3 probe.py {server.name}")
        assert f"refused {server.name} 1\n" in inside, inside  # EPERM: Landlock's scope, not a missing name
        threading.Event().wait(0.3)
        assert len(server.received) == 1
    finally:
        ws.end_episode()
        box.close()
        server.close()
