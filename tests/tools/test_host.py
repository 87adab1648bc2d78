"""The file tools' sandbox process (tools/host.py): the same observations as in this process, byte for byte;
outside paths as the sandbox sees them (real bubblewrap); bounded when the host hangs or dies."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from leaf_cli.llm.messages import ToolCall
from leaf_cli.tasks.envs.sandbox import BwrapSandbox
from leaf_cli.tools import Workspace, run_tool_call
from leaf_cli.tools import host as host_module
from leaf_cli.tools.host import ToolHost, host_argv, host_env, leaf_root

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
LEAF_FILE = Path(host_module.__file__).resolve().parent / "texts.py"
"""A file outside every work tree here, on the real root file system (the sandbox's /tmp is private)."""


def _tree(root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("one\ntwo\r\nthree\x0cfour\n", encoding="utf-8")
    (root / "pkg" / "sub" / "b.txt").write_bytes(b"\xef\xbb\xbfbom line\nsecond\n")
    (root / "bin.dat").write_bytes(b"\0\1\2binary")
    (root / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (root / "link").symlink_to(root / "pkg")
    os.mkfifo(root / "fifo")


def _calls(root: Path, outside: Path) -> list[tuple[str, dict]]:
    return [
        ("Read", {"file_path": "pkg/a.py"}), ("read", {"file_path": "pkg/a.py", "offset": 2, "limit": "1"}),
        ("Read", {"file_path": "pkg/a.py", "offset": 99}), ("Read", {"file_path": "pkg/sub/b.txt"}),
        ("Read", {"file_path": "bin.dat"}), ("Read", {"file_path": "missing.py"}), ("Read", {"file_path": "pkg"}),
        ("Read", {"file_path": "fifo"}), ("Read", {"file_path": str(root / "link" / "a.py")}),
        ("Read", {"file_path": "/etc/hostname"}), ("Read", {"file_path": str(LEAF_FILE), "limit": 3}),
        ("Read", {"file_path": str(outside)}), ("Read", {}), ("Read", {"file_path": "pkg/a.py", "offset": "x"}),
        ("Glob", {"pattern": "**/*"}), ("Glob", {"pattern": "pkg/"}), ("Glob", {"pattern": "*.py", "path": "pkg"}),
        ("Glob", {"pattern": "*", "path": "missing"}), ("Glob", {"pattern": str(LEAF_FILE.parent / "t*.py")}),
        ("Glob", {"pattern": "../*"}),
        ("Write", {"file_path": "new/dir/c.txt", "content": "héllo\n"}), ("Write", {"file_path": "latin.txt", "content": "cafe\u20ac\n"}),
        ("Write", {"file_path": "pkg", "content": "x"}), ("Write", {"file_path": "pkg/a.py/x", "content": "x"}),
        ("Edit", {"file_path": "pkg/a.py", "old_string": "two", "new_string": "2"}),
        ("Edit", {"file_path": "pkg/a.py", "old_string": "zzz", "new_string": "y"}),
        ("Edit", {"file_path": "pkg/a.py", "old_string": "o", "new_string": "0"}),
        ("Edit", {"file_path": "pkg/a.py", "old_string": "o", "new_string": "0", "replace_all": True}),
        ("Edit", {"file_path": "bin.dat", "old_string": "bin", "new_string": "x"}),
        ("Edit", {"file_path": "gone.py", "old_string": "a", "new_string": "b"}),
        ("Read", {"file_path": "pkg/a.py"}), ("Read", {"file_path": "new/dir/c.txt"}), ("Glob", {"pattern": "**/*.txt"}),
    ]


def _in_process(root: Path, calls: list[tuple[str, dict]]) -> list[tuple[str, bool]]:
    ws = Workspace(root=root, confined=False)
    out = [run_tool_call(ToolCall(id="c", name=name, arguments=args), ws) for name, args in calls]
    return [(r.text, r.is_error) for r in out]


def _hosted(root: Path, calls: list[tuple[str, dict]], prefix_for=lambda argv: argv) -> tuple[list[tuple[str, bool]], ToolHost]:
    host = ToolHost(prefix_for(host_argv(root)), env=host_env(), cwd=root)
    ws = Workspace(root=root, confined=False, file_host=host)
    try:
        out = [run_tool_call(ToolCall(id="c", name=name, arguments=args), ws) for name, args in calls]
    finally:
        ws.end_episode()
    return [(r.text, r.is_error) for r in out], host


def test_host_observations_equal_the_in_process_ones(tmp_path: Path) -> None:
    root, outside = tmp_path / "repo", tmp_path / "outside.txt"
    outside.write_text("outside the tree\n", encoding="utf-8")
    calls = _calls(root.resolve(), outside)
    _tree(root)
    expected = _in_process(root, calls)
    after_in_process = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    _tree(root)
    got, host = _hosted(root, calls)  # no sandbox prefix: the subprocess backend's host, the same file system
    assert got == expected
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == after_in_process
    assert host.starts == 1 and host._proc is None  # one process for the episode, ended by end_episode
    assert any("outside the tree" in text for text, _ in got) and any(t.startswith("OSError") for t, _ in got)


@needs_bwrap
def test_bwrap_host_reads_outside_and_never_writes_the_host(tmp_path: Path) -> None:
    root, home = tmp_path / "repo", tmp_path / "home"
    _tree(root)
    home.mkdir()
    probe, in_tmp = Path("/etc/leaf-host-probe.txt"), tmp_path / "elsewhere" / "x.txt"
    assert not probe.exists()
    reads = [("Read", {"file_path": "/etc/hostname"}), ("Read", {"file_path": str(LEAF_FILE), "limit": 3}),
             ("Glob", {"pattern": str(LEAF_FILE.parent / "t*.py")}), ("Read", {"file_path": "pkg/a.py"})]
    writes = [("Write", {"file_path": str(probe), "content": "x"}),
              ("Write", {"file_path": str(in_tmp), "content": "sandbox only"}), ("Read", {"file_path": str(in_tmp)}),
              ("Write", {"file_path": "inside.txt", "content": "lands\n"}),
              ("Edit", {"file_path": "/etc/hostname", "old_string": Path("/etc/hostname").read_text()[:2] or "x", "new_string": "zz"})]
    box = BwrapSandbox()
    wrap = lambda argv: box.wrap(argv, cwd=root, writable=[root, home], readonly=[leaf_root()])  # noqa: E731 - the attempt's binds
    try:
        got, _ = _hosted(root, reads + writes, wrap)
    finally:
        if probe.exists():  # this test runs as root here: never leave a stray file behind
            probe.unlink()
            pytest.fail("a sandboxed Write landed on the host's /etc")
    assert got[:len(reads)] == _in_process(root, reads)
    assert got[4] == (f"OSError: [Errno 30] Read-only file system: '{probe}'", True)
    assert got[5] == (f"Wrote {in_tmp} (12 bytes).", False) and "sandbox only" in got[6][0]  # the sandbox's /tmp
    assert not in_tmp.exists() and not in_tmp.parent.exists()  # ... which is not the host's
    assert got[7] == ("Wrote inside.txt (6 bytes).", False) and (root / "inside.txt").read_text() == "lands\n"
    assert got[8] == ("OSError: [Errno 30] Read-only file system: '/etc/hostname'", True)


def test_a_hung_host_times_out_and_a_dead_one_restarts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "f.txt").write_text("hi\n")
    monkeypatch.setattr(host_module, "START_TIMEOUT", 0.0)
    hung = ToolHost([sys.executable, "-c", "import time; time.sleep(60)"], env=host_env(), cwd=tmp_path, timeout=0.5)
    started = time.monotonic()
    result = hung.call("Read", {"file_path": "f.txt"})
    assert result.is_error and result.text.startswith("TimeoutError: the file tool did not answer within 0.5s")
    assert time.monotonic() - started < 10 and hung._proc is None  # killed, not left behind
    host = ToolHost(host_argv(tmp_path), env=host_env(), cwd=tmp_path, timeout=30)
    try:
        assert host.call("Read", {"file_path": "f.txt"}).text == "f.txt\n1. hi"
        os.killpg(host._proc.pid, signal.SIGKILL)
        host._proc.wait(timeout=10)
        # found dead between calls: a new host answers this call
        assert host.call("Read", {"file_path": "f.txt"}).text == "f.txt\n1. hi" and host.starts == 2
    finally:
        host.close()
    broken = ToolHost([sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"],
                      env=host_env(), cwd=tmp_path, timeout=10)
    failed = broken.call("Glob", {"pattern": "*"})  # dies during the call: the call's observation says so
    assert failed.is_error and failed.text.startswith("RuntimeError: the file tools' sandbox process ended")
    assert "exit code 3: boom" in failed.text
    assert broken.call("Glob", {"pattern": "*"}).is_error and broken.starts == 2 and broken._proc is None
