"""The review after a run on a terminal: the diff, then keep / undo / commit / move to a branch."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from leaf_cli.errors import LeafError
from leaf_cli.repo import commit as commits
from leaf_cli.repo.lifecycle import after_leaf_commit, undo_run
from leaf_cli.repo.runs import RunRecord
from leaf_cli.ui.review import ask_review, ask_text, show_diff
from leaf_cli.ui.safe_text import markup_safe, plain


def review(console: Console, run: RunRecord, patch: str, final_answer: str, task: str) -> str:
    """Show the diff and carry out the user's choice; return the choice made."""
    show_diff(console, patch)
    while True:
        choice = ask_review(console)
        try:
            return _apply(console, choice, run, patch, final_answer, task)
        except LeafError as exc:
            console.print(f"[red]{markup_safe(str(exc))}[/red]")  # e.g. a clashing branch name: ask again


def _apply(console: Console, choice: str, run: RunRecord, patch: str, final_answer: str, task: str) -> str:
    top = Path(run.top)
    if choice == "keep":
        console.print(f"Kept. [dim]`leaf undo {run.run_id}` takes it back.[/dim]")
    elif choice == "undo":
        _say_undone(console, undo_run(run, force=True))
        console.print("Undone: the repository is as it was before the run.")
    elif choice == "commit":
        message = ask_text(console, "Commit message", commits.draft_message(plain(final_answer), plain(task)))
        commit = commits.commit_on_branch(top, patch, plain(message))
        after_leaf_commit(run)  # leaf's own commit is the run's end state: `leaf undo` still takes it back
        console.print(f"Committed {commit[:10]}. [dim]`leaf undo {run.run_id}` takes it back.[/dim]")
    else:
        name = ask_text(console, "Branch name", f"leaf/{run.run_id}").strip()
        message = ask_text(console, "Commit message", commits.draft_message(plain(final_answer), plain(task)))
        commit = commits.commit_to_new_branch(top, patch, plain(message), name)
        _say_undone(console, undo_run(run, force=True, keep_refs=(f"refs/heads/{name}",)))  # the branch is the user's now
        console.print(f"Moved to branch {markup_safe(name)} ({commit[:10]}); this branch is as it was before the run.")
    return choice


def _say_undone(console: Console, report: object) -> None:
    from leaf_cli.cli.runs import report_lines

    for line in report_lines(report):
        console.print(f"[dim]{markup_safe(line)}[/dim]")
