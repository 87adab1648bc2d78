"""Fixtures for the tool tests: a real workdir under tmp_path and a one-line way to call a tool by name."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from leaf_cli.llm.messages import ToolCall
from leaf_cli.tools import Workspace, run_tool_call

Call = Callable[..., str]


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    """A workdir whose Bash gets a clean HOME: `bash -l` then skips the developer's shell profile (pyenv's
    rehash there is slow, and a timeout kill in the middle of it would leave a lock behind)."""
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    workspace = Workspace(work, env={**os.environ, "HOME": str(home)})
    yield workspace
    workspace.end_episode()  # as run_episode does: no Bash job outlives the test


@pytest.fixture
def call(ws: Workspace) -> Call:
    """`call("Read", file_path="x")` -> the observation text, exactly as the model would see it."""

    def _call(name: str, **arguments: Any) -> str:
        return run_tool_call(ToolCall(id="t1", name=name, arguments=arguments), ws).text

    return _call
