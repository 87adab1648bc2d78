"""One sandbox per episode: a tiny command server inside bubblewrap, and the client each Bash call runs.

Without it every command would get a sandbox (and a pid namespace) of its own, and a server started in one
call would be dead by the next: FrogNano's harness let background jobs live across calls, so the sandbox
must too. The server runs inside one long-lived bwrap (one pid namespace for the episode; killing that
bwrap at the episode's end kills every process in it). Each Bash call runs this file's client on the host,
which hands `argv`, the folder and the environment to the server over a unix socket, relays the command's
stdout and stderr as they come, and exits with its status (or dies by its signal), so the Bash tool sees
exactly what a plain subprocess would give it. Killing the client (a timeout) kills the command's leader,
as a timeout did in the harness; SIGTERM or SIGINT to the client go to the command's whole process group.

The socket is bound by leaf on the host, in a folder of its own that the sandbox cannot see or write, and
the server inherits the listening descriptor: nothing inside can swap the path the client connects to
(a symlink in the private /tmp once sent the next command to a socket of the host's). Before it accepts,
the server scopes itself and everything it starts with Landlock where the kernel has it: no connecting
to an abstract socket of the host, no signal to a process outside.

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


def serve(listen_fd: int, ready_fd: int) -> None:
    """Accept one connection per command on the inherited listener until the sandbox is killed; say
    "ready" on `ready_fd` first (leaf waits for it, and sees the sandbox fail to start as that pipe's EOF)."""
    listener = socket.socket(fileno=listen_fd)
    listener.set_inheritable(False)  # the agent's commands get no handle on it
    scoped = _landlock_scope()
    os.write(ready_fd, f"ready {scoped}\n".encode())
    os.close(ready_fd)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_run_one, args=(conn,), daemon=True).start()


_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2
_SYS_CREATE_RULESET, _SYS_RESTRICT_SELF = 444, 446  # one number on every architecture but alpha
_PR_SET_NO_NEW_PRIVS = 38


def _landlock_scope() -> str:
    """Scope this process and its descendants (Landlock ABI 6, Linux 6.12): refuse connects to abstract
    unix sockets made outside the sandbox and signals to processes outside it. Pathname sockets are not
    covered by any Landlock right this kernel generation has: the mount namespace hides those
    (bwrap.host_socket_cover). Returns what was applied, for the record."""
    if not sys.platform.startswith("linux"):
        return "none"
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 6:
        return f"none (landlock abi {abi})"
    attr = (ctypes.c_uint64 * 3)(0, 0, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)  # fs, net, scoped
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        return "none (landlock ruleset refused)"
    try:
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) != 0:
            return "none (landlock restrict refused)"
    finally:
        os.close(ruleset)
    return f"landlock abi {abi}"


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
        try:
            _send(sock, b"k", str(signum).encode())
        except OSError:
            pass  # the server is gone: the read below says so, without a traceback

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    while True:
        try:
            kind, data = _recv(sock)
        except (EOFError, OSError):  # a reset connection too: one line, never a traceback
            sys.stderr.write("leaf sandbox: the command's server went away\n")
            return 126
        if kind in (b"1", b"2"):
            _write_all(1 if kind == b"1" else 2, data)
        elif kind == b"x":
            code = int(data)
            if code < 0:  # killed by a signal: die by the same one, so the caller sees what a subprocess gives
                _die_by(-code)
            return code


def _die_by(signum: int) -> None:
    """End this process by `signum`. SIGKILL takes no handler (setting one raises: that was the traceback
    a `kill -9 $$` showed instead of `Exit code: -9`); any other gets its default action back first."""
    if signum != signal.SIGKILL:
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    os.kill(os.getpid(), signum)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(client(sys.argv[2], sys.argv[4:]))
