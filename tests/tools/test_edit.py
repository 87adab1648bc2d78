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
    ({"old_string": "return 3", "new_string": "x"}, "ValueError: old_string was not found"),
    ({"old_string": "return 1", "new_string": "return 2"},
     "ValueError: old_string matched 2 times; set replace_all=true or use a more specific old_string"),
    ({"old_string": "", "new_string": "x"}, "ValueError: old_string must be non-empty"),
    ({"old_string": "return 1", "new_string": "return 1"},
     "ValueError: old_string matched 2 times; set replace_all=true or use a more specific old_string"),
])
def test_failures_leave_the_file_byte_identical(call, src: Path, args: dict, message: str) -> None:
    before = src.read_bytes()
    assert call("Edit", file_path="m.py", **args) == message
    assert src.read_bytes() == before


def test_identical_strings_are_an_edit_that_changes_nothing(call, src: Path) -> None:
    before = src.read_bytes()
    assert call("Edit", file_path="m.py", old_string="def f", new_string="def f") == "Edited m.py (1 replacement)."
    assert src.read_bytes() == before


def test_missing_binary_and_folder(call, ws: Workspace) -> None:
    assert call("Edit", file_path="new.py", old_string="a", new_string="b") == (
        f"FileNotFoundError: [Errno 2] No such file or directory: '{ws.root / 'new.py'}'")
    (ws.root / "blob").write_bytes(b"ab\0cd")
    assert call("Edit", file_path="blob", old_string="ab", new_string="x").startswith(
        "BinaryFileError: blob is a binary file")
    assert (ws.root / "blob").read_bytes() == b"ab\0cd"
    (ws.root / "pkg").mkdir()
    assert call("Edit", file_path="pkg", old_string="a", new_string="b") == (
        f"IsADirectoryError: [Errno 21] Is a directory: '{ws.root / 'pkg'}'")


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


def test_latin1_file_is_never_corrupted(call, ws: Workspace) -> None:
    # FrogNano's harness decoded with replacement and wrote UTF-8 back, turning every latin-1 byte into U+FFFD.
    latin = ws.root / "old.c"
    data = b"/* caf\xe9 */\nint x = 1;\n"
    latin.write_bytes(data)
    # What Read showed for the non-UTF-8 byte is not in the file: not found, and the file is untouched.
    assert call("Edit", file_path="old.c", old_string="caf\ufffd", new_string="cafe") == "ValueError: old_string was not found"
    assert latin.read_bytes() == data
    # A character latin-1 cannot hold: the file becomes UTF-8, every other character kept.
    assert call("Edit", file_path="old.c", old_string="int x", new_string="int \u20ac") == "Edited old.c (1 replacement)."
    assert latin.read_bytes() == "/* café */\nint \u20ac = 1;\n".encode()
