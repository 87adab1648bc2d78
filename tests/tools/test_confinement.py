"""The path policy: a confined workspace (`leaf fix`) refuses every way out of the workdir (`..`, an
absolute path, a symlink) with `PermissionError: …`; an unconfined one (eval, TaskPilot, RL, where the
sandbox is the boundary) goes where FrogNano's harness went."""

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
        assert out.startswith(f"PermissionError: {path} is outside the working directory"), (name, out)
        assert "TOP SECRET" not in out
    assert outside.read_text() == "TOP SECRET\n"


def test_absolute_paths_inside_are_fine(call, ws: Workspace) -> None:
    target = ws.root / "x.txt"
    assert call("Write", file_path=str(target), content="a\n") == "Wrote x.txt (2 bytes)."
    assert call("Edit", file_path=str(target), old_string="a", new_string="b") == "Edited x.txt (1 replacement)."
    assert call("Read", file_path=str(target)) == "x.txt\n1. b"
    assert call("Read", file_path="~/x.txt").startswith("PermissionError: ~/x.txt is outside")


def test_glob_refuses_a_start_outside_and_dotdot_after_a_wildcard(call, ws: Workspace, outside: Path) -> None:
    assert call("Glob", pattern="*.txt", path="..").startswith("PermissionError: .. is outside the working directory")
    assert call("Glob", pattern=str(outside.parent / "*.txt")).startswith("PermissionError: ")
    assert call("Glob", pattern="*/../../*.txt").startswith("PermissionError: ")


def test_unconfined_workspace_goes_where_frognano_went(tmp_path: Path, ws: Workspace, outside: Path) -> None:
    from leaf_cli.llm.messages import ToolCall
    from leaf_cli.tools import run_tool_call

    free = Workspace(ws.root, env=ws.env, confined=False)

    def call(name: str, **arguments: object) -> str:
        return run_tool_call(ToolCall(id="c", name=name, arguments=arguments), free).text

    assert call("Read", file_path="../secret.txt") == f"{ws.root}/../secret.txt\n1. TOP SECRET"
    assert call("Read", file_path="link.txt") == f"{ws.root}/link.txt\n1. TOP SECRET"  # shown as given
    assert call("Write", file_path=str(tmp_path / "made.txt"), content="hi") == f"Wrote {tmp_path}/made.txt (2 bytes)."
    assert (tmp_path / "made.txt").read_text() == "hi"
    assert call("Glob", pattern="*.txt", path="..") == f"{ws.root}/../made.txt\n{ws.root}/../secret.txt"
