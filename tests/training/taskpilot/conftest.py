"""TaskPilot fixtures: a small real package repository and a session-wide snapshot cache.

The cache (sdists, snapshot repositories) is shared by the whole session so environments built by the
eval machinery (keyed by repository location) are built once; each test writes its own run folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the shared `taskpilot_mathx` helper module beside this file
from taskpilot_mathx import make_package_repo  # noqa: E402


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("taskpilot-cache")


@pytest.fixture(scope="session")
def mathx_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_package_repo(tmp_path_factory.mktemp("mathx") / "mathx")
