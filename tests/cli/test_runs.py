"""`leaf undo` after an agent that runs every destructive git command; `leaf runs` lists the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.fixcli import call, fix_json, leaf, script, turn
from tests.repo.gitrepo import fingerprint, messy_repo, sh

WRECK = ("git stash clear; git reset -q --hard HEAD~1; git clean -fdxq; git reflog expire --expire=now --all; "
         "git gc -q --prune=now; git checkout -q --orphan wreck; echo agent > agent.txt; rm -rf .git")


@pytest.mark.parametrize("sandbox", ["none", "auto"])
def test_undo_restores_everything_byte_for_byte(tmp_path: Path, sandbox: str) -> None:
    repo = messy_repo(tmp_path / "work")
    before = fingerprint(repo)
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command=WRECK)), {"content": "cleaned up"})
    code, out = fix_json(repo, spec, "--sandbox", sandbox, "tidy the repository")
    # Without a sandbox `.git` is gone; inside it, its config and hooks are read-only mounts that stay.
    assert code == 0 and (repo / ".git" / "config").exists() == (sandbox != "none")
    listing = leaf("runs", "--all")
    assert out["run_id"] in listing.stdout and "final_answer" in listing.stdout
    result = leaf("undo", "--workdir", str(repo))
    assert result.exit_code == 0, result.stderr
    assert fingerprint(repo) == before
    assert "undone" in leaf("runs", "--workdir", str(repo)).stdout


def test_undo_refuses_when_files_changed_since(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl", turn(call("Write", file_path="new.py", content="x = 1\n")), {"content": "ok"})
    _code, out = fix_json(git_repo, spec, "task")
    (git_repo / "calc.py").write_text("user edit after the run\n")
    refused = leaf("undo", out["run_id"])
    assert refused.exit_code == 2 and "files changed since the run: calc.py" in refused.stderr and "--force" in refused.stderr
    assert (git_repo / "new.py").exists()
    forced = leaf("undo", out["run_id"][:12], "--force")
    assert forced.exit_code == 0 and not (git_repo / "new.py").exists()
    assert sh(git_repo, "git status --porcelain") == ""


def test_branch_flag_and_undo_remove_the_branch(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command="echo y > y.txt && git add y.txt && git -c user.name=a "
                                                                   "-c user.email=a@b commit -qm agent")), {"content": "ok"})
    code, out = fix_json(git_repo, spec, "--branch", "leaf/try", "task")
    assert code == 0 and sh(git_repo, "git branch --show-current").strip() == "leaf/try"
    result = leaf("undo", out["run_id"])
    assert result.exit_code == 0 and "Removed refs/heads/leaf/try" in result.stderr
    assert sh(git_repo, "git branch --show-current").strip() == "main" and not (git_repo / "y.txt").exists()


def test_undo_without_runs_is_a_clear_error(git_repo: Path) -> None:
    result = leaf("undo", "--workdir", str(git_repo))
    assert result.exit_code == 2 and "no leaf run" in result.stderr
