"""Issue text cleanup: gh's plain output, comments, validation, AGENTS.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.agent.issue_input import clean_issue, issue_from_bytes, with_repo_memory
from leaf_cli.errors import LeafError

ISSUE = ("title:\tCrash on empty input\nstate:\tOPEN\nauthor:\toctocat\nlabels:\t\ncomments:\t2\nassignees:\t\n"
         "projects:\t\nmilestone:\t\nnumber:\t7\n--\nSteps:\n\n-- not a separator in prose\n1. run it\n")
COMMENTS = ("author:\talice\nassociation:\tmember\nedited:\tfalse\nstatus:\tnone\n--\nSame here.\n--\n"
            "author:\tbob\nassociation:\tnone\nedited:\ttrue\nstatus:\tnone\n--\nFixed?\nMaybe.\n--\n")


def test_gh_issue_becomes_title_and_body_without_empty_metadata() -> None:
    assert clean_issue(ISSUE) == ("# Crash on empty input\nstate: OPEN\nauthor: octocat\n\n"
                                  "Steps:\n\n-- not a separator in prose\n1. run it")


def test_gh_comments_are_kept() -> None:
    assert clean_issue(COMMENTS) == "## Comment by alice\nSame here.\n\n## Comment by bob\nFixed?\nMaybe."


def test_plain_text_is_only_trimmed() -> None:
    assert clean_issue("\n  Fix the parser: it drops\ttabs.\n\n") == "Fix the parser: it drops\ttabs."


@pytest.mark.parametrize("data, words", [(b"  \n", "empty"), (b"PK\x03\x04\x00", "binary"), (b"\xff\xfe", "UTF-8"),
                                         (b"a" * 1_000_001, "1 MB")], ids=["empty", "nul", "latin", "big"])
def test_bad_input(data: bytes, words: str) -> None:
    with pytest.raises(LeafError, match=words):
        issue_from_bytes(data, "stdin")


def test_agents_md_then_claude_md(tmp_path: Path) -> None:
    assert with_repo_memory("task", tmp_path) == "task"
    (tmp_path / "CLAUDE.md").write_text("claude rules")
    assert with_repo_memory("task", tmp_path).endswith("claude rules")
    (tmp_path / "AGENTS.md").write_text("agents rules")
    assert with_repo_memory("task", tmp_path).endswith("agents rules")
