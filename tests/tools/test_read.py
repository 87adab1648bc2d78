"""Read: the harness's `N. text` rendering, its 20,000-char cut, and the failure paths around it.

The per-case texts of FrogNano's harness are in test_frognano_observations.py; these are the properties
(streaming equals one-shot decoding, bounded memory and reads) that a table of cases cannot show."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from leaf_cli.tools import Workspace, read as read_mod
from leaf_cli.tools.args import CallArgs
from leaf_cli.tools.read import run_read


def _harness(text: str, shown: str, offset: int = 1, limit: int = 0, cap: int = 20_000) -> str:
    """The harness's algorithm (tool_runner._read), restated."""
    lines = text.splitlines()
    end = len(lines) if limit <= 0 else min(len(lines), offset - 1 + limit)
    selected = "\n".join(f"{n}. {line}" for n, line in enumerate(lines[offset - 1:end], start=offset))
    value = f"{shown}\n{selected}"
    return value if len(value) <= cap else f"{value[:cap]}\n[truncated {len(value) - cap} chars]"


def test_numbered_lines_under_the_path(call, ws: Workspace) -> None:
    (ws.root / "pkg").mkdir()
    (ws.root / "pkg" / "m.py").write_text("import os\n\ndef f():\n    return 1\n")
    expected = "pkg/m.py\n1. import os\n2. \n3. def f():\n4.     return 1"
    assert call("Read", file_path="pkg/m.py") == expected
    assert call("Read", file_path=str(ws.root / "pkg" / "m.py")) == expected  # absolute inside: shown relative


def test_offset_and_limit(call, ws: Workspace) -> None:
    (ws.root / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert call("Read", file_path="a.txt", offset=4, limit=2) == "a.txt\n4. line 4\n5. line 5"
    assert call("Read", file_path="a.txt", offset=9, limit=50) == "a.txt\n9. line 9\n10. line 10"
    assert call("Read", file_path="a.txt", offset=0, limit=1) == "a.txt\n1. line 1"  # below 1 means 1
    assert call("Read", file_path="a.txt", offset=10, limit=0) == "a.txt\n10. line 10"  # 0 means to the end


def test_offset_past_the_end_shows_the_header_alone(call, ws: Workspace) -> None:
    (ws.root / "a.txt").write_text("x\n" * 120)
    assert call("Read", file_path="a.txt", offset=500) == "a.txt\n"
    assert call("Read", file_path="a.txt", offset=121) == "a.txt\n"
    assert call("Read", file_path="a.txt", offset=120) == "a.txt\n120. x"


def test_empty_file(call, ws: Workspace) -> None:
    (ws.root / "empty").write_text("")
    assert call("Read", file_path="empty") == "empty\n"
    assert call("Read", file_path="empty", offset=2) == "empty\n"


def test_empty_file_is_cut_alike_whole_and_streamed(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    (ws.root / "empty").write_text("")
    monkeypatch.setattr(read_mod, "READ_CHARS", 3)
    whole = run_read(CallArgs({"file_path": "empty"}), ws)
    monkeypatch.setattr(read_mod, "WHOLE_FILE_BYTES", -1)
    assert run_read(CallArgs({"file_path": "empty"}), ws) == whole == "emp\n[truncated 3 chars]"


def test_line_endings_bom_and_invalid_utf8(call, ws: Workspace) -> None:
    (ws.root / "crlf.txt").write_bytes(b"a\r\nb\r\n\r\nc")
    assert call("Read", file_path="crlf.txt") == "crlf.txt\n1. a\n2. b\n3. \n4. c"
    (ws.root / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\n")
    assert call("Read", file_path="bom.txt") == "bom.txt\n1. \ufeffhello"  # read_text keeps the BOM
    (ws.root / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    assert call("Read", file_path="latin.txt") == "latin.txt\n1. caf\ufffd"


def test_truncated_at_20000_chars_like_the_harness(call, ws: Workspace) -> None:
    text = "".join(f"{i} " + "x" * 90 + "\n" for i in range(1000))
    (ws.root / "big.txt").write_text(text)
    out = call("Read", file_path="big.txt")
    assert out == _harness(text, "big.txt")
    assert out.endswith(f"\n[truncated {len(_harness(text, 'big.txt', cap=10**9)) - 20_000} chars]")


def test_failures(call, ws: Workspace) -> None:
    (ws.root / "d").mkdir()
    assert call("Read", file_path="d") == f"IsADirectoryError: [Errno 21] Is a directory: '{ws.root / 'd'}'"
    # A named pipe would block the harness for ever; leaf refuses it in the harness's error form.
    os.mkfifo(ws.root / "fifo")
    assert call("Read", file_path="fifo") == (
        f"OSError: [Errno 22] not a regular file (a pipe, socket or device): '{ws.root / 'fifo'}'")
    assert call("Read", file_path="nope.txt") == (
        f"FileNotFoundError: [Errno 2] No such file or directory: '{ws.root / 'nope.txt'}'")
    assert call("Read", file_path="") == "ValueError: file_path is required"


def _random_text(rng: random.Random) -> bytes:
    pieces = [b"\n", b"\r\n", b"\r", b"abc", b"x" * rng.randint(0, 40), "é€😀".encode(), b"\xff\xfe", b" ", b"12",
              b"\x0c", b"\x1e", "\u2028\x85".encode(), b"\xef\xbb\xbf", b"\0"]
    return b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 80)))


@pytest.mark.parametrize("seed", range(40))
def test_streaming_matches_whole_file_rendering(seed: int, ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    # The streaming path (large files) must give byte-identical observations to the one-shot path, also
    # when lines are cut into CHUNK pieces and when the cap falls mid-line; chars past the cap are only counted.
    rng = random.Random(seed)
    data = _random_text(rng)
    (ws.root / "f.txt").write_bytes(data)
    cases = [(None, None), (rng.randint(1, 5), None), (rng.randint(1, 5), rng.randint(1, 6)), (None, rng.randint(1, 4))]
    for cap in (5, 37, 200, 20_000):
        monkeypatch.setattr(read_mod, "READ_CHARS", cap)
        for offset, limit in cases:
            args = CallArgs({"file_path": "f.txt", "offset": offset, "limit": limit})
            monkeypatch.setattr(read_mod, "WHOLE_FILE_BYTES", 1 << 20)
            try:
                whole = run_read(args, ws)
            except ValueError as exc:
                whole = f"error: {exc}"
            monkeypatch.setattr(read_mod, "WHOLE_FILE_BYTES", -1)
            monkeypatch.setattr(read_mod, "CHUNK", rng.randint(1, 9))
            try:
                streamed = run_read(args, ws)
            except ValueError as exc:
                streamed = f"error: {exc}"
            assert streamed == whole, (cap, offset, limit, data)


def test_whole_file_rendering_matches_the_harness() -> None:
    rng = random.Random(7)
    for _ in range(200):
        text = _random_text(rng).decode("utf-8", errors="replace")
        offset, limit = rng.randint(1, 4), rng.choice([0, 1, 3])
        ours = read_mod._render_whole(text.encode(), "f", offset, limit)
        assert ours == _harness(text, "f", offset, limit)


def _bytes_read() -> int:
    """Bytes this process has read through read(2) so far (/proc/self/io `rchar`)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_limit_streams_instead_of_reading_the_whole_file(call, ws: Workspace) -> None:
    big = ws.root / "huge.log"
    with open(big, "wb") as f:
        f.write(b"".join(b"entry %d\n" % i for i in range(10_000)))
        f.truncate(1 << 30)  # a sparse 1 GB file
    before = _bytes_read()
    assert call("Read", file_path="huge.log", offset=3, limit=2) == "huge.log\n3. entry 2\n4. entry 3"
    assert _bytes_read() - before < 4 << 20


def test_huge_file_keeps_only_the_head(call, ws: Workspace) -> None:
    import tracemalloc

    lines = 400_000
    with open(ws.root / "big.txt", "w") as f:
        for i in range(lines):
            f.write(f"row {i}\n")
    tracemalloc.start()
    out = call("Read", file_path="big.txt")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    full = len("big.txt") + sum(len(f"\n{n}. row {n - 1}") for n in range(1, lines + 1))
    assert out.endswith(f"\n[truncated {full - 20_000} chars]")
    assert len(out) == 20_000 + len(f"\n[truncated {full - 20_000} chars]")
    assert peak < 8 << 20  # the file renders to ~5.7 MB; only chunks and the 20,000-char head are held


def test_many_short_lines_past_the_cap_match_the_harness(call, ws: Workspace) -> None:
    # More lines than could ever fit under the cap: only the head is numbered, the rest only counted.
    text = "".join(f"{i % 7}\n" for i in range(70_000))
    (ws.root / "short.txt").write_text(text)
    assert call("Read", file_path="short.txt") == _harness(text, "short.txt")
    assert call("Read", file_path="short.txt", offset=25_000, limit=4_000) == _harness(text, "short.txt", 25_000, 4_000)
    assert call("Read", file_path="short.txt", offset=10_000) == _harness(text, "short.txt", 10_000)
    # Line numbers past the table of ready-made `N. ` prefixes (65,536) are formatted on the spot.
    assert call("Read", file_path="short.txt", offset=65_530, limit=20) == _harness(text, "short.txt", 65_530, 20)


TRICKY_PATHS = ["pkg/m.py", "./pkg/m.py", "pkg//m.py", "pkg/./m.py", "pkg/../pkg/m.py", "alias/m.py", "link.py",
                "pkg/", ".", "ABS", "missing.py", "pkg/missing/x.py", "alias/../pkg/m.py", "../work/pkg/m.py"]


@pytest.mark.parametrize("path", TRICKY_PATHS)
def test_kernel_resolution_agrees_with_realpath(path: str, ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    # Workspace.resolve asks the kernel for the real path (an O_PATH open and its /proc fd); with /proc
    # switched off it falls back to lstat and realpath. Both must give the same path, or the same refusal.
    from leaf_cli.tools import workspace as ws_mod

    (ws.root / "pkg").mkdir()
    (ws.root / "pkg" / "m.py").write_text("x = 1\n")
    (ws.root / "alias").symlink_to("pkg")
    (ws.root / "link.py").symlink_to(ws.root / "pkg" / "m.py")
    path = str(ws.root / "alias" / "m.py") if path == "ABS" else path

    def outcome() -> str:
        try:
            return str(ws.resolve(path)) + " | " + run_read(CallArgs({"file_path": path}), ws)
        except Exception as exc:  # noqa: BLE001 - the observation text is what must agree
            return f"{type(exc).__name__}: {exc}"

    fast = outcome()
    monkeypatch.setitem(ws_mod._proc, "works", False)
    assert outcome() == fast
    if path in ("alias/m.py", "link.py", "ABS"):
        assert fast == f"{ws.root / 'pkg' / 'm.py'} | pkg/m.py\n1. x = 1"  # shown by its real path
