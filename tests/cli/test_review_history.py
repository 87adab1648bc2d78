"""Every review choice on a real terminal (pexpect), then `leaf undo` twice: the history says what each run
is (kept, committed, branched, undone), a plain undo takes the newest run that is not undone, a branch or
commit the review made stays reachable, and a second undo with nothing left says so."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pytest

from tests.cli.fixcli import call, fix_json, leaf, script, turn
from tests.repo.gitrepo import sh

ENV = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e.com", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@e.com"}
ANSWER = "Make add return the sum\n\nThe operator was a minus."


def spawn_fix(repo: Path, *args: str) -> pexpect.spawn:
    env = {**os.environ, **ENV, "COLUMNS": "120", "TERM": "xterm"}
    return pexpect.spawn(sys.executable, ["-m", "leaf_cli", "fix", *args], cwd=str(repo), env=env,
                         encoding="utf-8", timeout=30, dimensions=(40, 120))


def older_run(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run A, kept without a review (--yes): it writes older.txt."""
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    spec = script(tmp_path / "a.jsonl", turn(call("Write", file_path="older.txt", content="from run A\n")),
                  {"content": "wrote it"})
    code, out = fix_json(repo, spec, "write older")
    assert code == 0 and (repo / "older.txt").exists()
    sh(repo, "git add older.txt && git -c user.name=T -c user.email=t@e.com commit -qm 'user commits run A'")
    return str(out["run_id"])


def review_run(repo: Path, tmp_path: Path, keys: str) -> pexpect.spawn:
    """Run B on a terminal: a Bash call declined with a reason, the Edit allowed, then the review prompt."""
    spec = script(tmp_path / "b.jsonl",
                  turn(call("Bash", command="echo no > marker.txt")),
                  turn(call("Edit", file_path="calc.py", old_string="a - b", new_string="a + b")),
                  {"content": ANSWER})
    child = spawn_fix(repo, "--model", spec, "add subtracts")
    child.expect("Allow Bash")
    child.sendline("n")
    child.expect("Why not")
    child.sendline("do not write marker files")
    child.expect("Allow Edit")
    child.sendline("y")
    child.expect_exact("[k] yes, [u]ndo, [c]ommit, move to a [b]ranch")
    child.sendline(keys)
    return child


def finish(child: pexpect.spawn) -> str:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return str(child.before)


def newest_run(repo: Path) -> dict[str, str]:
    lines = leaf("runs", "--workdir", str(repo)).stdout.splitlines()
    header = lines[0].split("\t")
    assert header[:4] == ["run", "started", "state", "model"]
    return dict(zip(header, lines[1].split("\t")))


def state_of(repo: Path, run_id: str) -> str:
    rows = [line.split("\t") for line in leaf("runs", "--workdir", str(repo)).stdout.splitlines()[1:]]
    return next(row[2] for row in rows if row[0] == run_id)


@pytest.mark.parametrize("choice", ["keep", "undo", "commit", "branch"])
def test_each_choice_then_undo_twice(git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     choice: str) -> None:
    run_a = older_run(git_repo, tmp_path, monkeypatch)
    user_commit = sh(git_repo, "git rev-parse HEAD").strip()
    child = review_run(git_repo, tmp_path, choice[0])
    if choice == "commit":
        child.expect("Esc Enter for a new line")
        child.expect("> ")
        child.send("\x1b\r")  # Esc Enter: a new line in the message, not the end of it
        child.sendline("Reviewed-by: me")
    elif choice == "branch":
        child.expect("Branch name")
        child.expect("> ")
        assert "edit, then Enter" in child.before and "Esc Enter" not in child.before  # a name is one line
        child.send("\x15bad..name\r")  # Ctrl-U clears the default
        child.expect("not a valid branch name")
        assert "Commit message" not in child.before  # refused before the message is asked for
        child.expect("> ")
        child.sendline("")  # the default: leaf/fix-add-subtracts
        child.expect("Commit message")
        child.expect("> ")
        child.sendline("")
    shown = finish(child)
    run_b = newest_run(git_repo)["run"]
    expected = {"keep": "kept", "undo": "undone", "commit": "committed", "branch": "branched (leaf/fix-add-subtracts)"}
    assert newest_run(git_repo)["state"] == expected[choice], shown
    assert newest_run(git_repo)["model"].startswith("replay:")

    if choice != "undo":  # B is the newest run not undone
        first = leaf("undo", "--workdir", str(git_repo))
        assert first.exit_code == 0, first.stderr
        assert f"Undid run {run_b} ({expected[choice].split()[0]})" in first.stderr
        assert state_of(git_repo, run_b) == "undone" and state_of(git_repo, run_a) == "kept"
        assert "a - b" in (git_repo / "calc.py").read_text()
        assert sh(git_repo, "git rev-parse HEAD").strip() == user_commit and (git_repo / "older.txt").exists()
        if choice == "commit":
            kept = sh(git_repo, f"git rev-parse refs/leaf/undone/{run_b}").strip()
            assert f"stays as refs/leaf/undone/{run_b}" in first.stderr and kept[:10] in first.stderr
            assert sh(git_repo, f"git log -1 --format=%B {kept}") == \
                "Make add return the sum\n\nThe operator was a minus.\nReviewed-by: me\n\n"
        if choice == "branch":
            assert "stays as leaf/fix-add-subtracts" in first.stderr
            assert "a + b" in sh(git_repo, "git show leaf/fix-add-subtracts:calc.py")
    # A now; the user committed on top of it, so a plain undo refuses and says --force keeps a copy.
    second = leaf("undo", "--workdir", str(git_repo))
    assert second.exit_code == 2 and "HEAD moved since the run" in second.stderr and run_a in second.stderr
    assert "keeps a copy" in second.stderr
    forced = leaf("undo", "--workdir", str(git_repo), "--force")
    assert forced.exit_code == 0 and f"Undid run {run_a}" in forced.stderr and "refs/leaf/saved/" in forced.stderr
    assert not (git_repo / "older.txt").exists() and sh(git_repo, "git log --format=%s") == "initial\n"
    saved = [r for r in sh(git_repo, "git for-each-ref --format='%(refname)' refs/leaf/saved/").split()
             if r.endswith("/worktree")]
    assert len(saved) == 1 and sh(git_repo, f"git rev-parse {saved[0]}^").strip() == user_commit
    assert sh(git_repo, f"git show {saved[0]}:older.txt") == "from run A\n"
    if choice == "branch":  # undoing the older run did not delete the branch as a side effect
        assert "a + b" in sh(git_repo, "git show leaf/fix-add-subtracts:calc.py")
    if choice == "commit":
        assert sh(git_repo, f"git rev-parse refs/leaf/undone/{run_b}").strip()
    third = leaf("undo", "--workdir", str(git_repo))
    assert third.exit_code == 2 and "nothing left to undo" in third.stderr
    # Every reflog entry leaf's reviews and undos left says what made it (none with an empty message).
    entries = sh(git_repo, "git reflog show --all --format=%gd%x09%gs").splitlines()
    assert entries and all(line.split("\t", 1)[1].strip() for line in entries), entries


def test_a_declined_call_tells_the_agent_why(git_repo: Path, tmp_path: Path) -> None:
    child = review_run(git_repo, tmp_path, "k")
    finish(child)
    run_id = newest_run(git_repo)["run"]
    shown = leaf("runs", "show", run_id).stdout
    assert "PermissionError: the user declined this Bash call, saying: do not write marker files" in shown
    assert not (git_repo / "marker.txt").exists()


def test_ctrl_c_at_the_commit_prompt_says_what_state_the_repository_is_in(git_repo: Path, tmp_path: Path) -> None:
    child = review_run(git_repo, tmp_path, "c")
    child.expect("Commit message")
    child.expect("> ")
    child.sendcontrol("c")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130 or child.signalstatus is not None
    assert "still in the working tree, not committed" in child.before and "leaf undo" in child.before
    assert "a + b" in (git_repo / "calc.py").read_text() and sh(git_repo, "git log --format=%s") == "initial\n"
    assert newest_run(git_repo)["state"] == "kept"
    assert leaf("undo", "--workdir", str(git_repo)).exit_code == 0 and "a - b" in (git_repo / "calc.py").read_text()


def test_undo_drop_lets_the_branch_go(git_repo: Path, tmp_path: Path) -> None:
    child = review_run(git_repo, tmp_path, "b")
    child.expect("> ")
    child.sendline("")
    child.expect("> ")
    child.sendline("")
    finish(child)
    dropped = leaf("undo", "--workdir", str(git_repo), "--drop")
    assert dropped.exit_code == 0 and "Removed refs/heads/leaf/fix-add-subtracts" in dropped.stderr
    assert sh(git_repo, "git branch --list 'leaf/*'") == ""
