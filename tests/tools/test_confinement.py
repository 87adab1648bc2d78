"""No tool reaches outside the workdir through `..`, an absolute path or a symlink; none shows outside content."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.tools import Workspace


@pytest.fixture
def outside(tmp_path: Path, ws: Workspace) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    (ws.root / "link.txt").symlink_to(secret)
    (ws.root / "linkdir").symlink_to(tmp_path)
    return secret


@pytest.mark.parametrize("path", ["../secret.txt", "link.txt", "linkdir/secret.txt", "sub/../../secret.txt", "ABS"])
def test_every_file_tool_refuses_escapes(call, ws: Workspace, outside: Path, path: str) -> None:
    path = str(outside) if path == "ABS" else path
    for name, extra in [("Read", {}), ("Write", {"content": "pwned"}), ("Edit", {"old_string": "TOP", "new_string": "x"})]:
        out = call(name, file_path=path, **extra)
        assert out.startswith(f"OutsideWorkspaceError: {path} is outside the working directory"), (name, out)
        assert "TOP SECRET" not in out
    assert outside.read_text() == "TOP SECRET\n"


def test_absolute_paths_inside_are_fine(call, ws: Workspace) -> None:
    target = ws.root / "x.txt"
    assert call("Write", file_path=str(target), content="a\n") == "Wrote x.txt (2 bytes)."
    assert call("Edit", file_path=str(target), old_string="a", new_string="b") == "Edited x.txt (1 replacement)."
    assert call("Read", file_path=str(target)) == "x.txt\n1. b"
    assert call("Read", file_path="~/x.txt").startswith("OutsideWorkspaceError: ~/x.txt is outside")
