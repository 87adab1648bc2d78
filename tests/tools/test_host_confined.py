"""`leaf fix`'s file tools in the episode's sandbox (AgentSandbox.file_host): a confined tool host gives the
observations of a confined in-process workspace byte for byte, without a sandbox prefix and inside real
bubblewrap, so moving the tools into the sandbox changed nothing the model sees."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from leaf_cli.agent.sandbox import open_sandbox
from leaf_cli.llm.messages import ToolCall
from leaf_cli.tools import Workspace, run_tool_call
from leaf_cli.tools.host import ToolHost, host_argv, host_env
from tests.tools.test_host import _calls, _tree

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def _observe(ws: Workspace, calls: list[tuple[str, dict]]) -> list[tuple[str, bool]]:
    try:
        out = [run_tool_call(ToolCall(id="c", name=name, arguments=args), ws) for name, args in calls]
    finally:
        ws.end_episode()
    return [(r.text, r.is_error) for r in out]


def _layout(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _calls_with_links(root: Path, outside: Path) -> list[tuple[str, dict]]:
    """The eval host's calls plus the confined refusals: outside, `..`, a link out, a write into `.git`."""
    return [*_calls(root, outside), ("Read", {"file_path": "../outside.txt"}), ("Read", {"file_path": "out/x"}),
            ("Write", {"file_path": ".git/config", "content": "x"}), ("Glob", {"pattern": "*", "path": "out"}),
            ("Write", {"file_path": "link/new.txt", "content": "through an inside link\n"}),
            ("Read", {"file_path": "link/new.txt"}), ("Glob", {"pattern": "**/*.txt"})]


def _confined_tree(root: Path, outside: Path) -> None:
    _tree(root)
    (root / ".git").mkdir()
    (root / "out").symlink_to(outside.parent)


def _in_process(tmp_path: Path) -> tuple[Path, list, list, object]:
    """The tree, the calls, what the confined tools observe in leaf's own process and the layout they leave;
    the tree is then laid anew for the host under test."""
    root, outside = tmp_path / "repo", tmp_path / "outside.txt"
    outside.write_text("outside the tree\n", encoding="utf-8")
    calls = _calls_with_links(root.resolve(), outside)
    _confined_tree(root, outside)
    expected = _observe(Workspace(root), calls)
    after = _layout(root)
    _confined_tree(root, outside)
    return root, calls, expected, after


def test_confined_host_observations_equal_the_in_process_ones(tmp_path: Path) -> None:
    root, calls, expected, after = _in_process(tmp_path)
    assert any(t.startswith("PermissionError: ") for t, _ in expected)
    assert not any("outside the tree" in t for t, _ in expected)
    host = ToolHost(host_argv(root, confined=True), env=host_env(), cwd=root)
    assert _observe(Workspace(root, file_host=host), calls) == expected
    assert _layout(root) == after


@needs_bwrap
def test_fix_sandbox_host_observations_equal_the_in_process_ones(tmp_path: Path) -> None:
    root, calls, expected, _after = _in_process(tmp_path)
    box = open_sandbox("bwrap", root, root, tmp_path / "state")
    try:
        host = box.file_host(root.resolve(), str(tmp_path))
        assert host is not None and host.argv[0].endswith("bwrap")  # the sandbox's own argv, then the host
        assert _observe(Workspace(root, file_host=host), calls) == expected
        assert host.starts == 1
    finally:
        box.close()
