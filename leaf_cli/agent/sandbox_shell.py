"""One sandbox per episode: a tiny command server inside bubblewrap, and the client each Bash call runs.

Without it every command would get a sandbox (and a pid namespace) of its own, and a server started in one
call would be dead by the next: FrogNano's harness let background jobs live across calls, so the sandbox
must too. The server runs inside one long-lived bwrap (one pid namespace for the episode; killing that
bwrap at the episode's end kills every process in it). Each Bash call runs this file's client on the host,
which hands `argv`, the folder and the environment to the server over a unix socket in the episode's
private /tmp, relays the command's stdout and stderr as they come, and exits with its status (or dies by
its signal), so the Bash tool sees exactly what a plain subprocess would give it. Killing the client (a
timeout) kills the command's leader, as a timeout did in the harness; SIGTERM or SIGINT to the client go to
the command's whole process group.

Standard library only, no leaf imports: the server runs from a copy of this file inside the sandbox.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading

_HEAD = struct.Struct("!cI")  # frame: kind (b"1" stdout, b"2" stderr, b"x" exit status, b"k" signal), length


def _send(sock: socket.socket, kind: bytes, data: bytes) -> None:
    sock.sendall(_HEAD.pack(kind, len(data)) + data)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _recv(sock: socket.socket) -> tuple[bytes, bytes]:
    kind, length = _HEAD.unpack(_recv_exact(sock, _HEAD.size))
    return kind, _recv_exact(sock, length)


def serve(path: str) -> None:
    """Accept one connection per command until the sandbox is killed."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    os.rename(path + ".new", path)  # the client waits for this name: it appears only once listening works
    listener.listen(64)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_run_one, args=(conn,), daemon=True).start()


def _run_one(conn: socket.socket) -> None:
    try:
        kind, header = _recv(conn)
        request = json.loads(header)
        proc = subprocess.Popen(request["argv"], cwd=request["cwd"], env=request["env"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except Exception as exc:  # noqa: BLE001 - the client reports it as the command's failure
        try:
            _send(conn, b"2", f"leaf sandbox: {type(exc).__name__}: {exc}\n".encode())
            _send(conn, b"x", b"127")
        finally:
            conn.close()
        return
    selector = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    selector.register(proc.stdout, selectors.EVENT_READ, b"1")
    selector.register(proc.stderr, selectors.EVENT_READ, b"2")
    selector.register(conn, selectors.EVENT_READ, b"c")
    try:
        while len(selector.get_map()) > 1 or proc.poll() is None:
            if len(selector.get_map()) == 1:  # pipes closed: wait for the exit, still minding the client
                if not selector.select(0.05):
                    continue
            for key, _ in selector.select():
                if key.data == b"c":
                    try:
                        sent, value = _recv(conn)
                    except (EOFError, OSError):
                        proc.kill()  # the client was killed (a timeout): the leader goes, as in the harness
                        return
                    if sent == b"k":
                        _killpg(proc.pid, int(value))
                    continue
                data = os.read(key.fd, 1 << 16)
                if data:
                    _send(conn, key.data, data)
                else:
                    selector.unregister(key.fileobj)
        _send(conn, b"x", str(proc.returncode).encode())
    except OSError:
        proc.kill()
    finally:
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
        proc.wait()
        conn.close()


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def client(path: str, argv: list[str]) -> int:
    """Run `argv` through the server at `path`; relay its output; return (or die by) its status."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        sys.stderr.write(f"leaf sandbox: the episode's sandbox is gone ({exc.strerror}: {path})\n")
        return 126
    _send(sock, b"h", json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode())

    def forward(signum: int, _frame: object) -> None:
        _send(sock, b"k", str(signum).encode())

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    while True:
        try:
            kind, data = _recv(sock)
        except EOFError:
            sys.stderr.write("leaf sandbox: the command's server went away\n")
            return 126
        if kind in (b"1", b"2"):
            _write_all(1 if kind == b"1" else 2, data)
        elif kind == b"x":
            code = int(data)
            if code < 0:  # killed by a signal: die by the same one, so the caller sees what a subprocess gives
                signal.signal(-code, signal.SIG_DFL)
                os.kill(os.getpid(), -code)
            return code


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(client(sys.argv[2], sys.argv[4:]))
