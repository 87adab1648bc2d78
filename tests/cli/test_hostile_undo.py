"""`leaf undo` against a scripted agent (`--model replay:`) that leaves traps in the repository for it.

Each case performs the attack for real on a real repository with a decoy HOME, asserts that the attack
took effect (the symlink, FIFO or gitfile is there after the run, the other repository was reachable),
then that undo lost nothing: the work tree and git's view byte for byte, the other repository's refs,
config, hooks and index untouched, the decoy's file unchanged, what was moved aside reported.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.cli.fixcli import call, leaf, turn
from tests.cli.test_hostile_fix import decoy, run_fix  # noqa: F401 - decoy is a fixture
from tests.repo.gitrepo import fingerprint, messy_repo, sh
from tests.repo.test_hostile_state import git_dir_bytes, tree_bytes


def undo(repo: Path, *args: str) -> str:
    result = leaf("undo", "--workdir", str(repo), *args)
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr


def agent(repo: Path, tmp_path: Path, command: str, env: dict | None = None) -> dict:
    return run_fix(repo, tmp_path, "none", turn(call("Bash", command=command)), {"content": "ok"}, env=env)


def other_repo(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    """A second repository the agent aims undo at: branches main and feature, a hook, its own index."""
    other = messy_repo(tmp_path / "other")
    sh(other, "printf '#!/bin/sh\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit")
    return other, whole_git(other)


def whole_git(repo: Path, raw_index: bool = True) -> dict[str, object]:
    """Work tree, git's view, config/hooks/info, reflogs, and the raw index (off where undo rewrote files the
    index has clean: refreshing their stat data changes its bytes, not what it says)."""
    git = repo / ".git"
    return {"git": git_dir_bytes(repo), "index": (git / "index").read_bytes() if raw_index else b"", **fingerprint(repo),
            "logs": {str(p.relative_to(git)): p.read_bytes() for p in (git / "logs").rglob("*") if p.is_file()}}


def test_index_symlinked_to_a_file_in_home_is_replaced_not_written_through(tmp_path: Path, decoy: dict) -> None:
    repo = messy_repo(tmp_path / "work")
    before = whole_git(repo)
    precious = Path(decoy["HOME"]) / "precious" / "data.txt"
    precious.parent.mkdir()
    precious.write_bytes(b"the user's data\n")
    agent(repo, tmp_path, f"rm .git/index && ln -s {precious} .git/index && echo x >> src/calc.py", env=decoy)
    assert (repo / ".git" / "index").is_symlink()
    undo(repo)
    assert precious.read_bytes() == b"the user's data\n"
    assert not (repo / ".git" / "index").is_symlink() and whole_git(repo) == before


def test_commondir_pointing_at_another_repository_reaches_nothing(tmp_path: Path, decoy: dict) -> None:
    repo = messy_repo(tmp_path / "work")
    other, other_before = other_repo(tmp_path)
    before = whole_git(repo)
    out = agent(repo, tmp_path, f"echo {other}/.git > .git/commondir && git rev-parse --git-common-dir "
                                "&& git branch --list", env=decoy)
    seen = out["messages"][-2]["content"]
    assert f"{other}/.git" in seen and "feature" in seen  # git in this repository now reads the other one
    undo(repo)
    assert whole_git(other) == other_before
    assert not (repo / ".git" / "commondir").exists() and whole_git(repo) == before


def test_gitfile_naming_another_repository_reaches_nothing(tmp_path: Path, decoy: dict) -> None:
    repo = messy_repo(tmp_path / "work")
    other, other_before = other_repo(tmp_path)
    before = whole_git(repo)
    agent(repo, tmp_path, f"rm -rf .git && echo 'gitdir: {other}/.git' > .git && git branch -D feature "
                          "&& git rev-parse --git-dir", env=decoy)
    assert (repo / ".git").is_file()
    assert "feature" not in sh(other, "git branch --list")  # the other repository was reachable (and hit)
    sh(other, f"git branch feature {other_before['refs'].split()[0]}")  # as it was, to judge undo alone
    other_before_undo = whole_git(other)
    out = undo(repo)
    assert whole_git(other) == other_before_undo
    assert (repo / ".git").is_dir() and whole_git(repo) == before
    assert "Moved aside" in out and ".git" in out  # the gitfile the agent wrote is kept, not deleted


def test_moved_git_dir_is_moved_aside_and_reflogs_come_back(tmp_path: Path, decoy: dict) -> None:
    repo = messy_repo(tmp_path / "work")
    before = whole_git(repo)
    out = agent(repo, tmp_path, "mv .git .git-moved && echo 'gitdir: /nonexistent/x' > .git && echo y > y.txt",
                env=decoy)
    assert (repo / ".git-moved" / "HEAD").is_file() and (repo / ".git").is_file()
    assert ".git-moved/: a git dir" in out["patch"] and "b/.git-moved" not in out["patch"]
    said = undo(repo)
    assert not (repo / ".git-moved").exists() and whole_git(repo) == before
    moved = [line for line in said.splitlines() if line.startswith("Moved aside") and ".git-moved" in line]
    assert moved, said
    assert (Path(moved[0].rsplit("now ", 1)[1]) / "logs" / "HEAD").is_file()  # the reflogs are kept there


@pytest.mark.parametrize("hide", ["gitignore", "git_init"])
def test_folders_git_cannot_see_are_in_the_patch_and_removed(tmp_path: Path, decoy: dict, hide: str) -> None:
    repo = messy_repo(tmp_path / "work")
    before = whole_git(repo)
    conftest = "import pathlib; pathlib.Path('PWNED').write_text('x')\n"
    make = ("mkdir -p sneaky && printf '*\\n' > sneaky/.gitignore" if hide == "gitignore"
            else "git init -q sneaky")
    out = agent(repo, tmp_path, f"{make} && printf \"{conftest}\" > sneaky/conftest.py", env=decoy)
    assert (repo / "sneaky" / "conftest.py").is_file()
    assert "conftest" not in sh(repo, "git status --porcelain --untracked-files=all")  # git does not see it
    assert "b/sneaky/conftest.py" in out["patch"]
    said = undo(repo)
    assert not (repo / "sneaky").exists() and whole_git(repo) == before
    if hide == "git_init":
        assert "Moved aside" in said and "sneaky/.git" in said


def test_folder_replaced_by_a_symlink_into_home_is_not_written_through(tmp_path: Path, decoy: dict) -> None:
    repo = messy_repo(tmp_path / "work")
    precious = Path(decoy["HOME"]) / "precious"
    precious.mkdir()
    (precious / "calc.py").write_text("the user's own calc.py\n")
    before = whole_git(repo, raw_index=False)
    agent(repo, tmp_path, f"rm -rf src && ln -s {precious} src && ls src", env=decoy)
    assert (repo / "src").is_symlink() and (repo / "src" / "calc.py").read_text() == "the user's own calc.py\n"
    undo(repo)
    assert sorted(p.name for p in precious.iterdir()) == ["calc.py"]
    assert (precious / "calc.py").read_text() == "the user's own calc.py\n"
    assert not (repo / "src").is_symlink() and whole_git(repo, raw_index=False) == before


def test_objects_truncated_in_place_or_swapped_for_fifos_come_back(tmp_path: Path, decoy: dict) -> None:
    repo = messy_repo(tmp_path / "work")
    sh(repo, "git gc -q && echo loose > loose.txt && git add loose.txt && git commit -qm loose")
    before = whole_git(repo)
    wreck = ("for f in .git/objects/pack/*.pack; do chmod u+w $f; truncate -s 0 $f; done; "
             "for f in $(find .git/objects/?? -type f | head -3); do rm -f $f; mkfifo $f; done; echo done")
    agent(repo, tmp_path, wreck, env=decoy)
    assert any(stat.S_ISFIFO(p.lstat().st_mode) for p in (repo / ".git" / "objects").glob("??/*"))
    assert all(p.stat().st_size == 0 for p in (repo / ".git" / "objects" / "pack").glob("*.pack"))
    undo(repo)
    sh(repo, "git fsck --full --no-dangling 2>&1")
    assert whole_git(repo) == before


def test_files_replaced_by_fifos_come_back(tmp_path: Path, decoy: dict) -> None:
    repo = messy_repo(tmp_path / "work")
    before = whole_git(repo)
    out = agent(repo, tmp_path, "rm src/calc.py notes.txt && mkfifo src/calc.py notes.txt && echo done", env=decoy)
    assert stat.S_ISFIFO(os.lstat(repo / "src" / "calc.py").st_mode) and stat.S_ISFIFO(os.lstat(repo / "notes.txt").st_mode)
    assert "src/calc.py: a fifo" in out["patch"] and "notes.txt: a fifo" in out["patch"]
    undo(repo)
    assert not stat.S_ISFIFO(os.lstat(repo / "notes.txt").st_mode) and whole_git(repo) == before


def test_rebase_stopped_on_a_conflict_comes_back_after_the_agent_aborts_it(tmp_path: Path, decoy: dict) -> None:
    repo = tmp_path / "work"
    repo.mkdir()
    sh(repo, """
        git init -q -b main . && printf 'base\\n' > f.txt && git add -A && git commit -qm base
        git checkout -q -b other && printf 'theirs\\n' > f.txt && git commit -qam theirs
        git checkout -q main && printf 'ours\\n' > f.txt && git commit -qam ours
        git checkout -q other && (git rebase main >/dev/null 2>&1 || true) && test -f .git/REBASE_HEAD
    """)
    before, rebase_head = whole_git(repo), (repo / ".git" / "REBASE_HEAD").read_bytes()
    agent(repo, tmp_path, "git rebase --abort && echo x > x.txt", env=decoy)
    assert not (repo / ".git" / "REBASE_HEAD").exists()
    undo(repo)
    assert (repo / ".git" / "REBASE_HEAD").read_bytes() == rebase_head and whole_git(repo) == before


def test_repository_at_a_path_with_a_newline(tmp_path: Path, decoy: dict) -> None:
    repo = messy_repo(tmp_path / "new\nline")
    before = whole_git(repo)
    out = agent(repo, tmp_path, "echo more >> src/calc.py && rm -rf .git", env=decoy)
    assert "+more" in out["patch"]
    undo(repo)
    assert whole_git(repo) == before


def git_data(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every byte of a git dir but its objects (undo adds back what was pruned, and keeps what the run packed)."""
    return {k: v for k, v in tree_bytes(folder).items() if "/objects/" not in f"/{k}/"}


def submodule_repo(tmp_path: Path) -> Path:
    lib = tmp_path / "lib"
    lib.mkdir()
    sh(lib, "git init -q -b main . && echo 'v = 1' > lib.py && git add -A && git commit -qm lib")
    repo = messy_repo(tmp_path / "work")
    sh(repo, f"git -c protocol.file.allow=always submodule add -q {lib} vendor/lib && git commit -qm sub "
             "&& echo 'local = 1' >> vendor/lib/lib.py && echo scratch > vendor/lib/scratch.txt")
    return repo


def test_submodule_is_fixed_and_undone_exactly(tmp_path: Path, decoy: dict) -> None:
    repo = submodule_repo(tmp_path)
    sub = repo / "vendor" / "lib"
    before, sub_before, modules = whole_git(repo), fingerprint(sub), git_data(repo / ".git" / "modules")
    out = agent(repo, tmp_path, "cd vendor/lib && echo 'v = 2' > lib.py && git -c user.name=a -c user.email=a@b "
                                "commit -qam agent && git checkout -q --detach && git branch -D main "
                                "&& git reflog expire --expire=now --all && git gc -q --prune=now && rm scratch.txt",
                env=decoy)
    assert "vendor/lib/lib.py" in out["patch"] and "+v = 2" in out["patch"]
    assert "main" not in sh(sub, "git branch --list")
    undo(repo)
    assert fingerprint(sub) == sub_before and git_data(repo / ".git" / "modules") == modules
    assert whole_git(repo) == before


def test_nested_repository_is_fixed_and_undone_exactly(tmp_path: Path, decoy: dict) -> None:
    repo = messy_repo(tmp_path / "work")
    inner = repo / "tools"
    sh(repo, "mkdir tools && cd tools && git init -q -b main && echo 'x = 1' > t.py && git add -A && git commit -qm t "
             "&& echo wip >> t.py && printf '*.tmp\\n' > .gitignore && echo keep > cache.tmp")
    before, inner_before = whole_git(repo), whole_git(inner)
    out = agent(repo, tmp_path, "cd tools && echo 'x = 2' > t.py && rm -rf .git && echo n > new.py", env=decoy)
    assert "tools/t.py" in out["patch"] and "b/tools/new.py" in out["patch"] and not (inner / ".git").exists()
    undo(repo)
    assert whole_git(inner) == inner_before and (inner / "cache.tmp").read_text() == "keep\n"
    assert whole_git(repo) == before
