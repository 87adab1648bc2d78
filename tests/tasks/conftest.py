"""Real tasks for the eval tests, built from the toolz 1.0.0 sdist and its own test suite.

The sdist is downloaded once per session (`pip download --no-deps --no-binary :all:`); the tests skip with
the reason when that fails. A git repository gets the clean source as its first commit and one commit per
injected bug on top; each task starts at a bug commit and its gold patch is the fix (bug reversed).
The parent commit holds the fix, so these tasks also check that workspaces carry no history.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from leaf_cli.tasks import Task, dump_tasks

PACKAGE, VERSION = "toolz", "1.0.0"
TESTS = "toolz/tests/test_itertoolz.py"
SECOND_OK = "    seq = iter(seq)\n    next(seq)\n    return next(seq)\n"
SECOND_BUG = "    seq = iter(seq)\n    next(seq)\n    next(seq)\n    return next(seq)\n"
TAKE_OK = "    return itertools.islice(seq, n)\n"
TAKE_BUG = "    return itertools.islice(seq, n + 1)\n"
DROP_OK = "    return itertools.islice(seq, n, None)\n"
DROP_BUG = "    return itertools.islice(seq, n - 1 if n > 5 else n, None)\n"
HIDDEN_TEST = "\n\ndef test_drop_many():\n    assert list(drop(6, range(8))) == [6, 7]\n"
P2P = [f"{TESTS}::test_{name}" for name in ("remove", "groupby", "first", "nth", "last", "interleave")]


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="session")
def toolz_sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extracted toolz sdist (it ships toolz/tests)."""
    cache = tmp_path_factory.mktemp("sdist")
    got = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q",
                          "-d", str(cache), f"{PACKAGE}=={VERSION}"], capture_output=True, text=True, timeout=300)
    archives = list(cache.glob("*.tar.gz"))
    if got.returncode != 0 or not archives:
        pytest.skip(f"could not download the {PACKAGE} {VERSION} sdist from PyPI: {got.stderr.strip()[-200:]}")
    with tarfile.open(archives[0]) as tar:
        tar.extractall(cache)
    return cache / f"{PACKAGE}-{VERSION}"


@pytest.fixture(scope="session", autouse=True)
def leaf_cache(tmp_path_factory: pytest.TempPathFactory):
    """Environments and snapshots go to a session folder, shared by all tests (one venv build)."""
    old = os.environ.get("LEAF_CACHE_DIR")
    os.environ["LEAF_CACHE_DIR"] = str(tmp_path_factory.mktemp("leaf-cache"))
    yield Path(os.environ["LEAF_CACHE_DIR"])
    if old is None:
        os.environ.pop("LEAF_CACHE_DIR", None)
    else:
        os.environ["LEAF_CACHE_DIR"] = old


def _bug(repo: Path, clean: str, name: str, edits: list[tuple[str, str, str]], test_edit: str = "") -> tuple[str, str, str]:
    """Commit a bug on top of `clean`; returns (bug commit, gold patch, test_patch)."""
    git(repo, "checkout", "-q", "-B", name, clean)
    for rel, good, bad in edits:
        path = repo / rel
        assert good in path.read_text()
        path.write_text(path.read_text().replace(good, bad, 1))
    git(repo, "commit", "-qam", f"bug {name}")
    bug = git(repo, "rev-parse", "HEAD").strip()
    gold = git(repo, "diff", bug, clean)
    test_patch = ""
    if test_edit:
        path = repo / TESTS
        path.write_text(path.read_text() + test_edit)
        test_patch = git(repo, "diff")
        git(repo, "checkout", "-q", "--", TESTS)
    return bug, gold, test_patch


@pytest.fixture(scope="session")
def toolz_tasks(toolz_sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Task]]:
    """(task file, tasks): `second` (one F2P), `two` (two F2P: second and take), `drop` (hidden F2P test)."""
    root = tmp_path_factory.mktemp("toolz-tasks")
    repo = root / "toolz-repo"
    subprocess.run(["cp", "-r", str(toolz_sdist), str(repo)], check=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "toolz 1.0.0")
    clean = git(repo, "rev-parse", "HEAD").strip()
    src = "toolz/itertoolz.py"
    specs = {
        "second": ([(src, SECOND_OK, SECOND_BUG)], [f"{TESTS}::test_second"], ""),
        "two": ([(src, SECOND_OK, SECOND_BUG), (src, TAKE_OK, TAKE_BUG)],
                [f"{TESTS}::test_second", f"{TESTS}::test_take"], ""),
        "drop": ([(src, DROP_OK, DROP_BUG)], [f"{TESTS}::test_drop_many"], HIDDEN_TEST),
    }
    tasks = []
    for name, (edits, f2p, test_edit) in specs.items():
        bug, gold, test_patch = _bug(repo, clean, name, edits, test_edit)
        tasks.append(Task(
            instance_id=f"toolz__toolz-1.0.0.{name}", repo="toolz-repo", base_commit=bug, version=VERSION,
            problem_statement=f"toolz.{name} returns wrong results; see the failing tests.", patch=gold,
            test_patch=test_patch, FAIL_TO_PASS=json.dumps(f2p), PASS_TO_PASS=P2P,
            source={"kind": "pypi_sdist", "package": PACKAGE, "version": VERSION},
        ))
    path = root / "tasks.jsonl"
    dump_tasks(tasks, path)
    return path, tasks
