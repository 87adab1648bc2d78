"""Attempt workspaces: one commit, no history to read the fix from, hidden paths removed; patch extraction."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from leaf_cli.tasks import extract_patch, get_env, grade, make_attempt_workspace, make_sandbox
from leaf_cli.tasks.envs.docker import DockerSandbox
from leaf_cli.errors import LeafError

from .conftest import SECOND_BUG, SECOND_OK


def _second(toolz_tasks):  # noqa: ANN001, ANN202
    path, tasks = toolz_tasks
    return path.parent, next(t for t in tasks if t.instance_id.endswith(".second"))


def test_workspace_is_a_single_commit_without_hidden_paths(toolz_tasks, tmp_path: Path) -> None:
    base, task = _second(toolz_tasks)
    task = task.model_copy(update={"hidden_paths": ["README.rst", "toolz/tests/test_tlz.py"]})
    ws = make_attempt_workspace(task, tmp_path / "a", base)
    log = subprocess.run(["git", "log", "--all", "--oneline"], cwd=ws.root, capture_output=True, text=True).stdout
    assert len(log.splitlines()) == 1
    assert not (ws.root / "README.rst").exists() and not (ws.root / "toolz/tests/test_tlz.py").exists()
    assert SECOND_BUG in (ws.root / "toolz/itertoolz.py").read_text()
    # the agent fixes the code, edits a test, adds a file, and even commits: the patch sees it all
    (ws.root / "toolz/itertoolz.py").write_text((ws.root / "toolz/itertoolz.py").read_text().replace(SECOND_BUG, SECOND_OK))
    (ws.root / "toolz/tests/test_itertoolz.py").write_text("# gone\n")
    (ws.root / "NOTES.txt").write_text("new\n")
    (ws.root / "toolz/__pycache__").mkdir(exist_ok=True)
    (ws.root / "toolz/__pycache__/x.pyc").write_bytes(b"\0")
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-qam", "agent"], cwd=ws.root, check=True)
    patch, raw, touched = extract_patch(ws, task)
    assert touched == ["toolz/tests/test_itertoolz.py"]
    assert "toolz/itertoolz.py" in patch and "NOTES.txt" in patch and "test_itertoolz" not in patch
    assert "__pycache__" not in raw
    assert grade(task, patch, make_sandbox("subprocess"), base_dir=base).resolved


def test_environment_is_cached(toolz_tasks) -> None:
    base, task = _second(toolz_tasks)
    first = get_env(task, base)
    assert get_env(task, base) == first and first.python.exists()
    assert (first.path.parent / "ready").exists()


@pytest.mark.skipif(shutil.which("docker") is None, reason="[no-docker] the docker CLI is not installed")
def test_docker_grades_gold(toolz_tasks) -> None:
    base, task = _second(toolz_tasks)
    try:
        sandbox = make_sandbox("docker")
    except LeafError as exc:
        pytest.skip(f"[no-docker] no Docker daemon here: {exc}")
    assert isinstance(sandbox, DockerSandbox)
    assert grade(task, task.patch, sandbox, base_dir=base).resolved
