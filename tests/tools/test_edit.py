"""Edit: exact replacement that keeps the file's form, and failures that leave it byte-identical."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from leaf_cli.tools import Workspace


@pytest.fixture
def src(ws: Workspace) -> Path:
    path = ws.root / "m.py"
    path.write_text("def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    return path


def test_single_and_all_replacements(call, src: Path) -> None:
    assert call("Edit", file_path="m.py", old_string="def g():\n    return 1", new_string="def g():\n    return 2") == (
        "Edited m.py (1 replacement).")
    assert call("Edit", file_path="m.py", old_string="return", new_string="yield", replace_all=True) == (
        "Edited m.py (2 replacements).")
    assert src.read_text() == "def f():\n    yield 1\n\n\ndef g():\n    yield 2\n"
    assert call("Edit", file_path="m.py", old_string="def f", new_string="def h", replace_all=True) == (
        "Edited m.py (1 replacement).")
    assert call("Edit", file_path="m.py", old_string="    yield 2\n", new_string="") == "Edited m.py (1 replacement)."


@pytest.mark.parametrize(("args", "message"), [
    ({"old_string": "return 3", "new_string": "x"},
     "ValueError: old_string was not found in m.py; Read the file and copy the text exactly, indentation included"),
    ({"old_string": "return 1", "new_string": "return 2"},
     "ValueError: old_string matched 2 times; set replace_all=true or use a more specific old_string "
     "(include surrounding lines)"),
    ({"old_string": "", "new_string": "x"},
     "ValueError: old_string must be non-empty; quote the exact text to replace (use Write for a new file)"),
    ({"old_string": "return 1", "new_string": "return 1"},
     "ValueError: old_string and new_string are identical, so the edit would change nothing"),
])
def test_failures_leave_the_file_byte_identical(call, src: Path, args: dict, message: str) -> None:
    before = src.read_bytes()
    assert call("Edit", file_path="m.py", **args) == message
    assert src.read_bytes() == before


def test_missing_binary_and_folder(call, ws: Workspace) -> None:
    assert call("Edit", file_path="new.py", old_string="a", new_string="b") == (
        "FileNotFoundError: new.py does not exist; use Write to create a new file, or Glob to find the right path")
    (ws.root / "blob").write_bytes(b"ab\0cd")
    assert call("Edit", file_path="blob", old_string="ab", new_string="x").startswith(
        "BinaryFileError: blob is a binary file")
    assert (ws.root / "blob").read_bytes() == b"ab\0cd"
    (ws.root / "pkg").mkdir()
    assert call("Edit", file_path="pkg", old_string="a", new_string="b").startswith("IsADirectoryError: pkg is a directory")


def test_crlf_file_stays_crlf_when_the_model_sends_lf(call, ws: Workspace) -> None:
    path = ws.root / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    assert call("Edit", file_path="win.txt", old_string="one\ntwo\n", new_string="1\n2\n2b\n") == (
        "Edited win.txt (1 replacement).")
    assert path.read_bytes() == b"1\r\n2\r\n2b\r\nthree\r\n"
    assert call("Edit", file_path="win.txt", old_string="three", new_string="3\n4") == "Edited win.txt (1 replacement)."
    assert path.read_bytes() == b"1\r\n2\r\n2b\r\n3\r\n4\r\n"


def test_lf_lines_in_a_mixed_file_keep_lf(call, ws: Workspace) -> None:
    path = ws.root / "mixed.txt"
    path.write_bytes(b"a\r\nb\r\nc\r\nx\ny\n")
    call("Edit", file_path="mixed.txt", old_string="x\ny", new_string="x\nz")
    assert path.read_bytes() == b"a\r\nb\r\nc\r\nx\nz\n"


def test_bom_latin1_and_mode_are_kept(call, ws: Workspace) -> None:
    bom = ws.root / "bom.cs"
    bom.write_bytes(b"\xef\xbb\xbfclass A {}\n")
    bom.chmod(0o640)
    call("Edit", file_path="bom.cs", old_string="A", new_string="B")
    assert bom.read_bytes() == b"\xef\xbb\xbfclass B {}\n" and stat.S_IMODE(bom.stat().st_mode) == 0o640

    latin = ws.root / "old.c"
    latin.write_bytes(b"/* caf\xe9 */\nint x = 1;\n")
    call("Edit", file_path="old.c", old_string="x = 1", new_string="x = 2; /* d\xe9j\xe0 */")
    assert latin.read_bytes() == b"/* caf\xe9 */\nint x = 2; /* d\xe9j\xe0 */;\n"


def test_latin1_limits_are_explained_and_change_nothing(call, ws: Workspace) -> None:
    latin = ws.root / "old.c"
    data = b"/* caf\xe9 */\nint x = 1;\n"
    latin.write_bytes(data)
    assert call("Edit", file_path="old.c", old_string="int x", new_string="int \u20ac") == (
        "ValueError: old.c is a latin-1 file and new_string holds characters latin-1 cannot encode ('\u20ac'); "
        "use latin-1 characters only, or rewrite the whole file with Write")
    # What Read showed for the non-UTF-8 byte cannot be matched; the error says why.
    assert call("Edit", file_path="old.c", old_string="caf\ufffd", new_string="cafe").endswith(
        "the file is latin-1, not UTF-8, so Read showed some of its characters as \ufffd: choose an old_string without them")
    assert latin.read_bytes() == data
