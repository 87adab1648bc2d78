"""`leaf fix` in a real terminal (pexpect): the permission prompt, the live view, the review; and SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pexpect
import pytest

from tests.cli.fixcli import call, leaf_process, script, turn
from tests.repo.gitrepo import sh


def _spawn(repo: Path, *args: str) -> pexpect.spawn:
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@e.com", "COLUMNS": "120", "TERM": "xterm"}
    return pexpect.spawn(sys.executable, ["-m", "leaf_cli", "fix", *args], cwd=str(repo), env=env,
                         encoding="utf-8", timeout=30, dimensions=(40, 120))


def test_ask_mode_prompts_then_review_commits(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl",
                  turn(call("Edit", file_path="calc.py", old_string="a - b", new_string="a + b")),
                  turn(call("Bash", command="echo refused-by-user > marker.txt")),
                  {"content": "Fix add to return the sum", "reasoning_content": "The operator is wrong."})
    child = _spawn(git_repo, "--model", spec, "add subtracts")
    child.expect("Allow Edit")
    assert "+    return a + b" in child.before  # the preview is a diff
    child.sendline("y")
    child.expect("Allow Bash")
    child.sendline("n")
    child.expect("Why not")
    child.sendline("")  # no reason: the plain refusal
    child.expect("The operator is wrong.")  # reasoning streamed
    child.expect("final_answer")
    child.expect("Keep the changes")
    child.sendline("c")
    child.expect("Commit message")
    child.expect("> ")
    child.sendline("")  # accept the drafted message
    child.expect("Committed")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert not (git_repo / "marker.txt").exists()
    assert sh(git_repo, "git log -1 --format=%s").strip() == "Fix add to return the sum"
    assert sh(git_repo, "git status --porcelain") == ""


def test_review_undo_and_yes_never_prompts(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl", turn(call("Write", file_path="new.py", content="x = 1\n")), {"content": "done"})
    child = _spawn(git_repo, "--model", spec, "add a file")
    child.expect("Allow Write")
    child.sendline("y")
    child.expect("Keep the changes")
    child.sendline("u")
    child.expect("Undone")
    child.expect(pexpect.EOF)
    assert not (git_repo / "new.py").exists()
    child = _spawn(git_repo, "--yes", "--model", script(tmp_path / "t.jsonl",
                                                          turn(call("Write", file_path="new.py", content="x\n")),
                                                          {"content": "done"}), "again")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and "Allow" not in child.before and (git_repo / "new.py").exists()


def test_sigterm_kills_the_tool_and_saves_interrupted(git_repo: Path, tmp_path: Path) -> None:
    # A duration no other process on a shared machine uses; under the sandbox the command is not leaf's child.
    token = f"sleep 60.{os.getpid()}{len(str(tmp_path))}"
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command=f"{token}; echo late > late.txt")), {"content": "x"})
    proc = leaf_process("fix", "--json", "--model", spec, "wait", cwd=git_repo, stdout=-1, stderr=-1, stdin=-3)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and token not in os.popen("ps -eo args").read():
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out, _err = proc.communicate(timeout=30)
    result = json.loads(out)
    assert proc.returncode == 1 and result["exit_reason"] == "interrupted"
    assert Path(result["trajectory"]).is_file()
    time.sleep(0.5)
    assert not (git_repo / "late.txt").exists()
    assert token not in os.popen("ps -eo args").read()


def test_repository_settings_need_trust_once(git_repo: Path, tmp_path: Path) -> None:
    """A .leaf.toml that sets mode is asked about once on a terminal; yes is remembered."""
    (git_repo / ".leaf.toml").write_text('mode = "yolo"\n')
    spec = script(tmp_path / "s.jsonl", turn(call("Write", file_path="new.py", content="x = 1\n")), {"content": "done"})
    child = _spawn(git_repo, "--model", spec, "add a file")
    child.expect_exact("[y]es, [n]o")
    child.sendline("y")
    child.expect("Keep the changes")  # yolo from the now-trusted file: the Write was not asked about
    assert "Allow Write" not in child.before
    child.sendline("k")
    child.expect(pexpect.EOF)
    child = _spawn(git_repo, "--model", script(tmp_path / "t.jsonl", {"content": "nothing"}), "again")
    child.expect(pexpect.EOF)
    assert "Trust it?" not in child.before
