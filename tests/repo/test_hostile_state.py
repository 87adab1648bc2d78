"""Checkpoints against what a hostile agent does to a repository, judged byte for byte.

Each case builds a real repository holding one kind of state a plain git tree misses (modes, CRLF under
text=auto, empty folders, a failing clean filter, ignored files, merge/rebase state, sparse-checkout,
planted config and hooks), lets a script play the agent, restores, and compares every byte and mode of the
work tree and of `.git`'s config, hooks and info/, and git's view (status, index, refs, stash).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from leaf_cli.repo.checkpoint import RecordError, record
from leaf_cli.repo.restore import restore
from leaf_cli.repo.store import store_for
from tests.repo.gitrepo import fingerprint, messy_repo, sh


def tree_bytes(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file, folder and link under `root` (outside .git) with its full mode and bytes."""
    found: dict[str, tuple[int, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            body = (os.readlink(path).encode() if stat.S_ISLNK(st.st_mode) else
                    b"" if stat.S_ISDIR(st.st_mode) else path.read_bytes())
            found[str(path.relative_to(root))] = (st.st_mode, body)
    return found


def git_dir_bytes(root: Path) -> dict[str, tuple[int, bytes]]:
    """The repository's config, every hook and everything under info/, byte for byte."""
    git = Path(sh(root, "git rev-parse --path-format=absolute --git-common-dir").strip())
    found = {"config": (0, (git / "config").read_bytes())}
    for folder in ("hooks", "info"):
        for path in sorted((git / folder).rglob("*")) if (git / folder).is_dir() else []:
            found[str(path.relative_to(git))] = (path.lstat().st_mode, b"" if path.is_dir() else path.read_bytes())
    return found


def full_state(root: Path) -> dict[str, object]:
    return {"tree": tree_bytes(root), "git": git_dir_bytes(root), **fingerprint(root),
            "unmerged": sh(root, "git ls-files -u"), "index": sh(root, "git ls-files -s")}


def roundtrip(repo: Path, tmp_path: Path, agent: str, before_check: object = None) -> None:
    """Record, run `agent` (a bash script), restore; the repository must be what it was.

    Only the work tree is compared right after the agent: the test's own git calls must not run what the
    agent planted. `before_check` runs right after the restore, before any other git call.
    """
    before = full_state(repo)
    store = store_for(tmp_path / "state", repo)
    state = record(repo, store, tmp_path / "state" / "meta")
    sh(repo, agent)
    assert tree_bytes(repo) != before["tree"], "the agent script changed no file: the case tests too little"
    restore(repo, store, state)
    if callable(before_check):
        before_check()
    after = full_state(repo)
    for key in before:
        assert after[key] == before[key], key


def test_store_shares_no_inode_and_survives_truncated_objects(tmp_path: Path) -> None:
    repo = messy_repo(tmp_path / "work")
    sh(repo, "git gc -q && echo loose > loose.txt && git add loose.txt && git commit -qm loose")
    store = store_for(tmp_path / "state", repo)
    record(repo, store, tmp_path / "state" / "meta")
    repo_inodes = {p.stat().st_ino for p in (repo / ".git" / "objects").rglob("*") if p.is_file()}
    store_inodes = {p.stat().st_ino for p in (store / "objects").rglob("*") if p.is_file()}
    assert repo_inodes and store_inodes and not repo_inodes & store_inodes
    roundtrip(repo, tmp_path / "again",
              "find .git/objects -type f -exec chmod u+w {} + -exec truncate -s 0 {} + && rm -rf .git src")


def test_modes_crlf_empty_dirs_and_a_failing_clean_filter(tmp_path: Path) -> None:
    repo = tmp_path / "work"
    repo.mkdir()
    sh(repo, r"""
        git init -q -b main . && printf 'base\n' > base.txt && git add -A && git commit -qm base
        printf '* text=auto\n*.bin filter=lfs diff=lfs\n' > .gitattributes
        git config filter.lfs.clean false && git config filter.lfs.required true
        printf 'key\n' > key.pem && chmod 600 key.pem
        printf 'one\r\ntwo\r\n' > crlf.txt
        printf 'data\n' > blob.bin
        mkdir -p empty deep/empty2
    """)
    roundtrip(repo, tmp_path, "chmod 644 key.pem && printf 'lf\\n' > crlf.txt && echo new > blob.bin "
                              "&& rmdir empty deep/empty2 && mkdir made && touch made/.keep && mkdir made2")


def test_ignored_files_survive_an_agent_that_unignores_them(tmp_path: Path) -> None:
    repo = tmp_path / "work"
    repo.mkdir()
    sh(repo, """
        git init -q -b main . && printf '.env\\nbuild/\\n' > .gitignore && git add -A && git commit -qm base
        printf 'SECRET=1\\n' > .env && mkdir build && printf 'obj' > build/out.o
    """)
    roundtrip(repo, tmp_path, ": > .gitignore && echo new > made.txt")
    assert (repo / ".env").read_text() == "SECRET=1\n" and (repo / "build" / "out.o").read_bytes() == b"obj"


def test_planted_config_hooks_and_info_are_put_back(tmp_path: Path) -> None:
    repo = messy_repo(tmp_path / "work")
    marker = tmp_path / "ran"

    def nothing_ran() -> None:
        assert not list(tmp_path.glob("ran-*")), "leaf's own git calls ran the agent's config"

    roundtrip(repo, tmp_path, before_check=nothing_ran, agent=f"""
        git config core.fsmonitor 'touch {marker}-fsmonitor'
        printf '#!/bin/sh\\ntouch {marker}-hook\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout
        printf '#!/bin/sh\\ntouch {marker}-hook\\n' > .git/hooks/reference-transaction
        chmod +x .git/hooks/reference-transaction
        printf '* filter=evil\\n' > .git/info/attributes && git config filter.evil.clean 'touch {marker}-clean; cat'
        git config filter.evil.smudge 'touch {marker}-smudge; cat' && git config diff.external 'touch {marker}-ext'
        printf '[core]\\n\\tfsmonitor = touch {marker}-include\\n' > evil.inc && git config include.path $PWD/evil.inc
        echo changed >> src/calc.py
    """)


@pytest.mark.parametrize("operation", ["merge", "cherry-pick", "rebase"])
def test_operation_state_in_progress_is_restored(tmp_path: Path, operation: str) -> None:
    repo = tmp_path / "work"
    repo.mkdir()
    sh(repo, f"""
        git init -q -b main . && printf 'base\\n' > f.txt && git add -A && git commit -qm base
        git checkout -q -b other && printf 'theirs\\n' > f.txt && git commit -qam theirs
        git checkout -q main && printf 'ours\\n' > f.txt && git commit -qam ours
        git checkout -q {'other' if operation == 'rebase' else 'main'}
        git {operation} {'main' if operation == 'rebase' else 'other'} >/dev/null 2>&1 || true
        test -e .git/MERGE_HEAD -o -e .git/CHERRY_PICK_HEAD -o -d .git/rebase-merge
    """)
    abort = {"merge": "git merge --abort", "cherry-pick": "git cherry-pick --abort", "rebase": "git rebase --abort"}
    roundtrip(repo, tmp_path, f"{abort[operation]} && echo x > x.txt")


def test_sparse_checkout_comes_back_after_disable(tmp_path: Path) -> None:
    repo = tmp_path / "work"
    repo.mkdir()
    sh(repo, "git init -q -b main . && mkdir src docs && echo s > src/a.py && echo d > docs/g.md && git add -A "
             "&& git commit -qm base && git sparse-checkout set src && echo wip >> src/a.py")
    assert not (repo / "docs").exists()
    roundtrip(repo, tmp_path, "git sparse-checkout disable && test -e docs/g.md")
    assert not (repo / "docs").exists()


def test_linked_worktree_is_restored(tmp_path: Path) -> None:
    main = messy_repo(tmp_path / "work")
    sh(main, "git worktree add -q ../linked -b linked feature")
    linked = tmp_path / "linked"
    sh(linked, "echo wip > wip.txt && echo edit >> docs/guide.md")
    roundtrip(linked, tmp_path, "git reset -q --hard HEAD~1 && git clean -fdxq && echo x > new.txt")


def test_nested_repository_is_recorded_and_restored(tmp_path: Path) -> None:
    repo = messy_repo(tmp_path / "work")
    inner = repo / "inner"
    sh(repo, "mkdir inner && cd inner && git init -q -b main && echo i > i.txt && git add i.txt && git commit -qm i "
             "&& echo wip >> i.txt && echo u > untracked.txt")
    inner_before = full_state(inner)
    roundtrip(repo, tmp_path, "cd inner && git reset -q --hard && git clean -fdxq && rm -rf .git && echo x > x.txt")
    assert full_state(inner) == inner_before


@pytest.mark.skipif(os.geteuid() == 0, reason="[root] root reads every file, so nothing is unreadable")
def test_unreadable_file_refuses_to_record(tmp_path: Path) -> None:
    repo = messy_repo(tmp_path / "work")
    secret = repo / "locked.txt"
    secret.write_text("x")
    secret.chmod(0)
    with pytest.raises(RecordError, match="cannot record"):
        record(repo, store_for(tmp_path / "s", repo), tmp_path / "s" / "meta")


def test_checkpoint_while_git_gc_repacks(tmp_path: Path) -> None:
    """A `git gc` packing and deleting loose objects while the checkpoint copies them: the copy goes round
    again until every ref and index entry is in the store, and the restore is exact."""
    import subprocess

    repo = messy_repo(tmp_path / "work")
    sh(repo, "for i in $(seq 1 300); do echo $i > f$i.txt; done && git add f*.txt && git commit -qm many "
             "&& for i in $(seq 1 300); do echo x$i > f$i.txt; done && git add f*.txt")
    before = full_state(repo)
    # repack.updateServerInfo=false: a repack also writes info/refs, derived data that the checkpoint rightly
    # records when it lands before the copy, which would make `before` (taken before any gc) differ by timing
    gc_once = "git -c gc.auto=0 -c repack.updateServerInfo=false gc -q --prune=now"
    gc = subprocess.Popen(["bash", "-c", f"for i in 1 2 3 4 5 6; do {gc_once}; done"],
                          cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        store = store_for(tmp_path / "state", repo)
        state = record(repo, store, tmp_path / "state" / "meta")
    finally:
        gc.wait(timeout=120)
    sh(repo, "rm -rf .git f1.txt")
    restore(repo, store, state)
    after = full_state(repo)
    for key in before:
        assert after[key] == before[key], key
