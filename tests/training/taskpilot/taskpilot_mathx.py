"""The `mathx` package: a small real repository with a pytest suite, for TaskPilot tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CORE = '''\
def clamp(value, low, high):
    """Clamp value into [low, high]."""
    if value < low:
        return low
    if value > high:
        return high
    return value


def mean(values):
    if not values:
        raise ValueError("mean of nothing")
    return sum(values) / len(values)


def window(seq, size):
    return [seq[i:i + size] for i in range(len(seq) - size + 1)]


def is_even(n):
    return n % 2 == 0
'''

TESTS = '''\
import pytest

from mathx.core import clamp, is_even, mean, window


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_low():
    assert clamp(-3, 0, 10) == 0


def test_clamp_high():
    assert clamp(42, 0, 10) == 10


def test_mean():
    assert mean([1, 2, 3, 6]) == 3


def test_mean_empty():
    with pytest.raises(ValueError):
        mean([])


def test_window():
    assert window([1, 2, 3, 4], 2) == [[1, 2], [2, 3], [3, 4]]


def test_window_whole():
    assert window([1, 2], 2) == [[1, 2]]


@pytest.mark.parametrize("n, expected", [(2, True), (3, False), (0, True)])
def test_is_even(n, expected):
    assert is_even(n) is expected
'''


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@e"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def make_package_repo(root: Path, extra_tests: str = "") -> Path:
    """A real git repository holding the `mathx` package and its pytest suite."""
    (root / "mathx").mkdir(parents=True)
    (root / "mathx" / "__init__.py").write_text("")
    (root / "mathx" / "core.py").write_text(CORE)
    (root / "tests").mkdir()
    (root / "tests" / "test_core.py").write_text(TESTS + extra_tests)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "mathx")
    return root
