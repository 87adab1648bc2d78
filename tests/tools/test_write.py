"""Write: atomic replace, parent folders, and the file's existing form (line endings, BOM, encoding, mode)."""

from __future__ import annotations

import os
import stat

import pytest

from leaf_cli.tools import Workspace, textfile


def test_creates_parents_and_reports_bytes(call, ws: Workspace) -> None:
    assert call("Write", file_path="a/b/c.py", content="x = 1\n") == "Wrote a/b/c.py (6 bytes)."
    assert (ws.root / "a/b/c.py").read_bytes() == b"x = 1\n"
    assert call("Write", file_path="u.txt", content="é") == "Wrote u.txt (1 bytes)."  # characters, as FrogNano counted


def test_new_file_mode_follows_umask_and_no_temp_is_left(call, ws: Workspace) -> None:
    call("Write", file_path="n.txt", content="hi")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((ws.root / "n.txt").stat().st_mode) == 0o666 & ~umask
    assert sorted(p.name for p in ws.root.iterdir()) == ["n.txt"]


def test_overwrite_keeps_mode(call, ws: Workspace) -> None:
    script = ws.root / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o750)
    assert call("Write", file_path="run.sh", content="echo new\n") == "Wrote run.sh (9 bytes)."
    assert stat.S_IMODE(script.stat().st_mode) == 0o750 and script.read_text() == "echo new\n"


def test_crlf_bom_and_latin1_files_keep_their_form(call, ws: Workspace) -> None:
    (ws.root / "w.bat").write_bytes(b"@echo off\r\nset A=1\r\n")
    assert call("Write", file_path="w.bat", content="@echo on\nset A=2\n") == "Wrote w.bat (17 bytes)."
    assert (ws.root / "w.bat").read_bytes() == b"@echo on\r\nset A=2\r\n"
    (ws.root / "b.txt").write_bytes(b"\xef\xbb\xbfold\n")
    call("Write", file_path="b.txt", content="new\n")
    assert (ws.root / "b.txt").read_bytes() == b"\xef\xbb\xbfnew\n"
    call("Write", file_path="b.txt", content="\ufeffagain\n")  # a copied BOM is not doubled
    assert (ws.root / "b.txt").read_bytes() == b"\xef\xbb\xbfagain\n"
    (ws.root / "l.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    call("Write", file_path="l.txt", content="th\xe9\n")
    assert (ws.root / "l.txt").read_bytes() == b"th\xe9\n"
    call("Write", file_path="l.txt", content="euro \u20ac\n")  # latin-1 cannot hold it: the file becomes UTF-8
    assert (ws.root / "l.txt").read_bytes() == "euro \u20ac\n".encode()


def test_symlink_inside_writes_its_target(call, ws: Workspace) -> None:
    (ws.root / "real.txt").write_text("old")
    (ws.root / "link.txt").symlink_to("real.txt")
    assert call("Write", file_path="link.txt", content="new") == "Wrote real.txt (3 bytes)."
    assert (ws.root / "link.txt").is_symlink() and (ws.root / "real.txt").read_text() == "new"
    free = Workspace(ws.root, confined=False)  # unconfined: written through the link all the same
    from leaf_cli.llm.messages import ToolCall
    from leaf_cli.tools import run_tool_call

    out = run_tool_call(ToolCall(id="c", name="Write", arguments={"file_path": "link.txt", "content": "again"}), free)
    assert out.text == "Wrote real.txt (5 bytes)."
    assert (ws.root / "link.txt").is_symlink() and (ws.root / "real.txt").read_text() == "again"


def test_failures(call, ws: Workspace) -> None:
    (ws.root / "d").mkdir()
    assert call("Write", file_path="d", content="x") == f"IsADirectoryError: [Errno 21] Is a directory: '{ws.root / 'd'}'"
    (ws.root / "f").write_text("x")
    assert call("Write", file_path="f/g.txt", content="x").startswith("FileExistsError: ")
    assert call("Write", file_path="../out.txt", content="x").startswith("PermissionError: ../out.txt is outside")
    assert not (ws.root.parent / "out.txt").exists()


def test_a_failed_write_leaves_the_old_file(call, ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    target = ws.root / "keep.txt"
    target.write_text("original\n")

    def broken_replace(src: str, dst: str, **_fds: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(textfile.os, "replace", broken_replace)
    assert call("Write", file_path="keep.txt", content="new\n") == "OSError: [Errno 28] No space left on device"
    assert target.read_text() == "original\n"
    assert sorted(p.name for p in ws.root.iterdir()) == ["keep.txt"]  # the temp file was removed
