"""The review after a run: keys shown as typed, commit and branch choices that keep the change and stay
undoable, and a drafted commit message that is a whole subject line with the final answer as its body."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from leaf_cli.cli import fix_review
from leaf_cli.llm.messages import ToolCall
from leaf_cli.repo import lifecycle
from leaf_cli.repo.commit import draft_message
from leaf_cli.ui import review as ui
from tests.cli.fixcli import leaf
from tests.repo.gitrepo import fingerprint, sh

IDENTITY = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e.com", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@e.com"}


def console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=True, width=200, color_system=None), buffer


def test_prompts_show_their_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("builtins.input", lambda *_a: "k")
    con, buffer = console()
    assert ui.ask_review(con) == "keep"
    assert "Keep the changes? [k] yes, [u]ndo, [c]ommit, move to a [b]ranch" in buffer.getvalue()
    monkeypatch.setattr("builtins.input", lambda *_a: "a")
    con, buffer = console()
    call = ToolCall(id="1", name="Bash", arguments={"command": "ls \x1b[8mhidden"})
    assert ui.ask_permission(con, call, None) == "always"
    shown = buffer.getvalue()
    assert "[y]es, [n]o, [a]lways for Bash" in shown and "\x1b[8m" not in shown and "hidden" in shown


def test_draft_message_keeps_the_whole_subject_and_the_answer_as_body() -> None:
    answer = ("Fixed the off-by-one in the pagination helper so the last page is no longer dropped when the "
              "count divides evenly\n\nAlso added a regression test.")
    message = draft_message(answer, "task")
    subject, _, body = message.partition("\n\n")
    assert subject == answer.splitlines()[0] and "..." not in subject
    assert body == "Also added a regression test."  # the subject is not said again in the body
    assert draft_message("", "Fix the parser\nmore") == "Fix the parser"


@pytest.fixture()
def finished_run(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, object, str]:
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    (git_repo / "wip.txt").write_text("user's own work in flight\n")
    run = lifecycle.begin_run(git_repo, title="t")
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    patch = lifecycle.finish_run(run, "final_answer")
    lifecycle.release_run(run)
    monkeypatch.setattr(fix_review, "ask_text", lambda _c, _label, default, **_kw: default)
    return git_repo, run, patch


def test_commit_choice_stays_undoable(finished_run: tuple[Path, object, str], tmp_path: Path) -> None:
    repo, run, patch = finished_run
    start = sh(repo, "git rev-parse HEAD")
    con, _ = console()
    fix_review._apply(con, "commit", run, patch, "Make add return the sum", "task")
    assert sh(repo, "git log -1 --format=%s").strip() == "Make add return the sum"
    assert sh(repo, "git status --porcelain --untracked-files=all") == "?? wip.txt\n"  # the user's work stays out
    result = leaf("undo", "--workdir", str(repo))
    assert result.exit_code == 0, result.stderr
    assert sh(repo, "git rev-parse HEAD") == start and "a - b" in (repo / "calc.py").read_text()
    assert (repo / "wip.txt").exists()


def test_branch_choice_keeps_the_branch_and_restores_this_one(finished_run: tuple[Path, object, str]) -> None:
    repo, run, patch = finished_run
    con, buffer = console()
    fix_review._apply(con, "branch", run, patch, "Make add return the sum", "task")
    name = "leaf/fix-t"  # from the run's title, "t"
    assert f"Moved to branch {name}" in buffer.getvalue()
    assert "a + b" in sh(repo, f"git show {name}:calc.py") and "a - b" in (repo / "calc.py").read_text()
    again = leaf("undo", "--workdir", str(repo), "--force")
    assert again.exit_code == 0 and sh(repo, f"git rev-parse --verify -q refs/heads/{name}").strip()
    assert fingerprint(repo)["status"].count("wip.txt") == 1
