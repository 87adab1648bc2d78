"""Store mechanics of an undo that trusts nothing: timed-out and stale git locks, refs read as files, the
walked snapshot (ignored-at-start paths kept out, special files as markers), patches of large files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.repo import git as gitmod
from leaf_cli.repo.checkpoint import current_tree, record
from leaf_cli.repo.patch import make_patch
from leaf_cli.repo.refs import read_refs
from leaf_cli.repo.restore import restore
from leaf_cli.repo.store import stat_cache, store_for
from tests.repo.gitrepo import fingerprint, messy_repo, sh


def test_a_timed_out_git_leaves_no_index_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = messy_repo(tmp_path / "work")
    store = store_for(tmp_path / "state", repo)
    state = record(repo, store, tmp_path / "state" / "meta")
    with open(repo / "big.bin", "wb") as fh:
        fh.truncate(3 << 30)  # sparse: hashing 3 GiB takes git longer than the limit below
    monkeypatch.setattr(gitmod, "GIT_TIMEOUT", 0.5)
    with pytest.raises(LeafError, match="timed out"):
        current_tree(repo, store, state)
    lock = stat_cache(store, repo).with_name(stat_cache(store, repo).name + ".lock")
    assert not lock.exists()
    monkeypatch.setattr(gitmod, "GIT_TIMEOUT", 300.0)
    (repo / "big.bin").unlink()
    assert current_tree(repo, store, state) == state.worktree_tree


def test_a_stale_lock_from_a_killed_leaf_is_cleared(tmp_path: Path) -> None:
    repo = messy_repo(tmp_path / "work")
    before = fingerprint(repo)
    store = store_for(tmp_path / "state", repo)
    state = record(repo, store, tmp_path / "state" / "meta")
    cache = stat_cache(store, repo)
    cache.with_name(cache.name + ".lock").write_bytes(b"")  # what a `kill -9` of leaf mid-snapshot leaves
    sh(repo, "echo agent > agent.txt")
    restore(repo, store, state)
    assert fingerprint(repo) == before


def test_a_users_own_index_lock_is_never_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a lock the killed git made goes: one that was there before the call is someone else's."""
    repo = messy_repo(tmp_path / "work")
    lock = repo / ".git" / "index.lock"
    lock.write_bytes(b"user's git")
    monkeypatch.setattr(gitmod, "GIT_TIMEOUT", 0.05)
    with pytest.raises(LeafError):
        gitmod.git(repo, "-c", "alias.slow=!sleep 5", "slow", env={"GIT_INDEX_FILE": str(repo / ".git" / "index")})
    assert lock.read_bytes() == b"user's git"


def test_refs_are_read_as_files_without_following_links(tmp_path: Path) -> None:
    repo = messy_repo(tmp_path / "work")
    sh(repo, "git pack-refs --all && git branch loose")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "heads").mkdir(parents=True)
    (elsewhere / "heads" / "planted").write_text("0" * 40 + "\n")
    os.symlink(elsewhere, repo / ".git" / "refs" / "linked")
    found = read_refs(repo / ".git", repo / ".git")
    listed = dict(line.split(" ")[::-1] for line in sh(repo, "git for-each-ref --format='%(objectname) %(refname)'").split("\n") if line)
    assert {k: v for k, v in found.items() if not k.startswith("refs/linked")} == listed
    assert "refs/linked/heads/planted" not in found


def test_snapshot_sees_what_git_does_not_and_keeps_ignored_paths_out(tmp_path: Path) -> None:
    repo = messy_repo(tmp_path / "work")
    store = store_for(tmp_path / "state", repo)
    state = record(repo, store, tmp_path / "state" / "meta")
    sh(repo, "mkdir hid && printf '*\\n' > hid/.gitignore && echo c > hid/conftest.py && echo changed > debug.log "
             "&& echo new > new.log && mkfifo fifo")
    patch = make_patch(repo, store, state.worktree_tree, current_tree(repo, store, state)).text
    assert "b/hid/conftest.py" in patch and "b/hid/.gitignore" in patch
    assert "b/new.log" in patch  # made by the run: listed, though ignored now
    assert "debug.log" not in patch  # ignored when the run started: the user's, not the run's
    assert "fifo: a fifo" in patch


PROBE = """
import json, resource, sys
from pathlib import Path
from leaf_cli.repo.checkpoint import RepoState, current_tree
from leaf_cli.repo.patch import make_patch
repo, store, saved = (Path(a) for a in sys.argv[1:4])
state = RepoState.model_validate_json(saved.read_text())
patch = make_patch(repo, store, state.worktree_tree, current_tree(repo, store, state))
# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a probe started by a big pytest worker
# (one that ran the learning run) would report the worker's peak, not its own.
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"patch": patch.text, "self": peak,
                  "git": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def test_large_file_is_named_not_loaded_and_memory_stays_flat(tmp_path: Path) -> None:
    """A 1 GiB sparse file: the patch names it; peak memory of the whole patch stays far below its size."""
    repo = messy_repo(tmp_path / "work")
    store = store_for(tmp_path / "state", repo)
    state = record(repo, store, tmp_path / "state" / "meta")
    saved = tmp_path / "state.json"
    saved.write_text(state.model_dump_json())
    with open(repo / "big.bin", "wb") as fh:
        fh.truncate(1 << 30)
    sh(repo, "echo small >> src/calc.py")
    proc = subprocess.run([sys.executable, "-c", PROBE, str(repo), str(store), str(saved)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert "big.bin: 1.0 GiB, over the 8.0 MiB patch limit" in result["patch"]
    assert "+small" in result["patch"] and "GIT binary patch" not in result["patch"]
    assert max(result["self"], result["git"]) < 200 * 1024, result  # KiB: far below the file's 1 GiB
