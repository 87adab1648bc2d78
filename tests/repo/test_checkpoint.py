"""Checkpoint and restore on real repositories, against the destructive commands an agent can run."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.repo.checkpoint import current_tree, diff, record
from leaf_cli.repo.restore import restore
from leaf_cli.repo.store import store_for
from tests.repo.gitrepo import files_of, fingerprint, messy_repo, sh

DESTRUCTIVE = {
    "reset_hard_and_clean": "git reset -q --hard HEAD~1 && git clean -fdxq",
    "gc_prune": "git stash clear && git reset -q --hard && git clean -fdq && git reflog expire --expire=now --all "
                "&& git gc -q --prune=now",
    "orphan": "git checkout -q --orphan wild && git rm -rfq . && git clean -fdxq && echo x > only.txt "
              "&& git add only.txt && git commit -qm wild && git branch -D main feature",
    "rm_git": "rm -rf .git src && echo agent > notes.txt && chmod +x docs/guide.md",
    "everything": "git stash clear; git checkout -q --orphan o; git reset -q --hard; git clean -fdxq; "
                  "git gc -q --prune=now; rm -rf .git; mkdir -p build && echo b > build/out && echo n > new.txt",
}


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return messy_repo(tmp_path / "work")


@pytest.mark.parametrize("script", DESTRUCTIVE.values(), ids=list(DESTRUCTIVE))
def test_restore_survives_destructive_commands(repo: Path, tmp_path: Path, script: str) -> None:
    before = fingerprint(repo)
    store = store_for(tmp_path / "state", repo)
    state = record(repo, store, tmp_path / "state" / "meta")
    sh(repo, script)
    assert files_of(repo) != before["files"]
    restore(repo, store, state)
    after = fingerprint(repo)
    for key in before:
        assert after[key] == before[key], key


def test_record_does_not_touch_the_repository(repo: Path, tmp_path: Path) -> None:
    before = fingerprint(repo)
    index = (repo / ".git" / "index").read_bytes()
    record(repo, store_for(tmp_path / "s", repo), tmp_path / "s" / "meta")
    assert fingerprint(repo) == before
    assert (repo / ".git" / "index").read_bytes() == index


def test_diff_includes_new_modified_deleted_and_mode(repo: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path / "s", repo)
    state = record(repo, store, tmp_path / "s" / "meta")
    sh(repo, "echo brand > brand_new.txt && rm notes.txt && echo more >> src/calc.py && chmod +x docs/guide.md")
    patch = diff(repo, store, state.worktree_tree, current_tree(repo, store, state))
    assert "brand_new.txt" in patch and "new file mode 100644" in patch
    assert "deleted file mode 100644" in patch and "notes.txt" in patch
    assert "+more" in patch
    assert "old mode 100644\nnew mode 100755" in patch
    assert "debug.log" not in patch  # ignored files are not the user's tracked or untracked work


def test_unborn_branch_is_restored(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    sh(repo, "git init -q -b main . && echo a > a.txt")
    store = store_for(tmp_path / "s", repo)
    state = record(repo, store, tmp_path / "s" / "meta")
    sh(repo, "git add -A && git commit -qm agent && echo b > b.txt")
    restore(repo, store, state)
    assert sh(repo, "git rev-parse --verify -q HEAD || echo unborn").strip() == "unborn"
    assert sh(repo, "git status --porcelain --untracked-files=all") == "?? a.txt\n"
    assert sh(repo, "git for-each-ref") == ""
