"""Where the issue comes from: stdin, files, `gh` (a fake `gh` script on PATH stands in for GitHub's CLI)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.cli.fixcli import fix_json, leaf, script

GH_PLAIN = ("title:\tadd() subtracts\nstate:\tOPEN\nauthor:\toctocat\nlabels:\tbug\ncomments:\t0\nassignees:\t\n"
            "projects:\t\nmilestone:\t\nnumber:\t123\n--\nadd(2, 3) returns -1.\n")


def test_gh_plain_output_piped_to_stdin(git_repo: Path, tmp_path: Path) -> None:
    _code, out = fix_json(git_repo, script(tmp_path / "s.jsonl", {"content": "ok"}), "-", input=GH_PLAIN)
    assert out["messages"][1]["content"] == "# add() subtracts\nstate: OPEN\nauthor: octocat\nlabels: bug\n\nadd(2, 3) returns -1."


def test_issue_file(git_repo: Path, tmp_path: Path) -> None:
    (tmp_path / "issue.md").write_text("Fix add.\n")
    _code, out = fix_json(git_repo, script(tmp_path / "s.jsonl", {"content": "ok"}), "--issue-file", str(tmp_path / "issue.md"))
    assert out["messages"][1]["content"] == "Fix add."


@pytest.mark.parametrize("data, message", [(b"", "empty"), (b"\x00\x01binary", "binary"), (b"x" * 1_000_001, "limit")],
                         ids=["empty", "binary", "over_1mb"])
def test_bad_stdin_exits_2(git_repo: Path, data: bytes, message: str) -> None:
    result = leaf("fix", "--workdir", str(git_repo), "--model", "replay:x", "-", input=data)
    assert result.exit_code == 2 and message in result.stderr and result.stdout == ""


def test_missing_issue_file_and_two_sources(git_repo: Path, tmp_path: Path) -> None:
    assert "does not exist" in leaf("fix", "--workdir", str(git_repo), "--issue-file", str(tmp_path / "nope")).stderr
    both = leaf("fix", "--workdir", str(git_repo), "--issue-file", str(tmp_path / "nope"), "text")
    assert both.exit_code == 2 and "one way only" in both.stderr


def _fake_gh(folder: Path, body: str, code: int = 0) -> dict[str, str]:
    """A stand-in `gh` on PATH (GitHub is unreachable here): records its argv, prints canned JSON."""
    folder.mkdir()
    exe = folder / "gh"
    exe.write_text(f"#!/bin/sh\necho \"$@\" > {folder}/argv\ncat <<'EOF'\n{body}\nEOF\nexit {code}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def test_gh_flag_runs_gh_issue_view(git_repo: Path, tmp_path: Path) -> None:
    env = _fake_gh(tmp_path / "bin", '{"title": "Crash", "body": "It crashes.", "comments": '
                   '[{"author": {"login": "alice"}, "body": "Me too."}]}')
    _code, out = fix_json(git_repo, script(tmp_path / "s.jsonl", {"content": "ok"}), "--gh", "123", env=env)
    assert out["messages"][1]["content"] == "# Crash\n\nIt crashes.\n\n## Comment by alice\nMe too."
    assert (tmp_path / "bin" / "argv").read_text().split() == ["issue", "view", "123", "--json", "title,body,comments"]


def test_gh_missing_or_failing(git_repo: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = leaf("fix", "--workdir", str(git_repo), "--gh", "1", env={"PATH": str(empty)})
    assert missing.exit_code == 2 and "not installed" in missing.stderr
    env = _fake_gh(tmp_path / "bin", "", code=1)
    failing = leaf("fix", "--workdir", str(git_repo), "--gh", "1", env=env)
    assert failing.exit_code == 2 and "gh issue view 1" in failing.stderr
