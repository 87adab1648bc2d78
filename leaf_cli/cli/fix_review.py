"""The review after a run on a terminal: the diff, then keep / undo / commit / move to a branch.

Each choice leaves the run in one state of its history (kept, undone, committed, branched), and every
state but undone is what a plain `leaf undo` takes back next.
"""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console

from leaf_cli.errors import LeafError
from leaf_cli.repo import commit as commits
from leaf_cli.repo.git import git
from leaf_cli.repo.history import Undone
from leaf_cli.repo.lifecycle import after_leaf_commit, move_to_branch, undo_run
from leaf_cli.repo.restore import RestoreReport
from leaf_cli.repo.runs import RunRecord
from leaf_cli.ui.review import ask_review, ask_text, show_diff
from leaf_cli.ui.safe_text import markup_safe, plain

_SLUG_WORDS = 6


def review(console: Console, run: RunRecord, patch: str, final_answer: str, task: str) -> str:
    """Show the diff and carry out the user's choice; return the choice made.

    Ctrl-C or Ctrl-D at any prompt leaves the change where it is (the run stays kept), says so, and
    ends leaf as an interrupt does (exit 130).
    """
    show_diff(console, patch)
    try:
        while True:
            choice = ask_review(console)
            try:
                return _apply(console, choice, run, patch, final_answer, task)
            except LeafError as exc:
                console.print(f"[red]{markup_safe(str(exc))}[/red]")  # e.g. a message git refused: ask again
    except (KeyboardInterrupt, EOFError):
        console.print(f"\nStopped at the review. The run's change is still in the working tree, not committed "
                      f"(run {run.run_id}, kept). [dim]`leaf undo` takes it back; `leaf runs show {run.run_id}` "
                      "shows it.[/dim]")
        raise KeyboardInterrupt from None


def _apply(console: Console, choice: str, run: RunRecord, patch: str, final_answer: str, task: str) -> str:
    top = Path(run.top)
    if choice == "keep":
        console.print(f"Kept. [dim]`leaf undo {run.run_id}` takes it back.[/dim]")
    elif choice == "undo":
        _say_undone(console, undo_run(run, force=True))
        console.print("Undone: the repository is as it was before the run.")
    elif choice == "commit":
        message = ask_text(console, "Commit message", commits.draft_message(plain(final_answer), plain(task)),
                           multiline=True)
        commit = commits.commit_on_branch(top, patch, plain(message))
        after_leaf_commit(run, commit)  # leaf's own commit is the run's end state: `leaf undo` still takes it back
        console.print(f"Committed {commit[:10]}. [dim]`leaf undo {run.run_id}` takes it back (the commit stays "
                      "reachable).[/dim]")
    else:
        name = _ask_branch(console, top, default_branch(top, run))
        message = ask_text(console, "Commit message", commits.draft_message(plain(final_answer), plain(task)),
                           multiline=True)
        commit = commits.commit_to_new_branch(top, patch, plain(message), name)
        _say_undone(console, move_to_branch(run, name, commit))
        console.print(f"Moved to branch {markup_safe(name)} ({commit[:10]}); this branch is as it was before the "
                      f"run. [dim]`leaf undo {run.run_id}` marks it undone and keeps the branch; with --drop it deletes the "
                      "branch too.[/dim]")
    return choice


def _say_undone(console: Console, done: Undone | RestoreReport) -> None:
    """What the undo (or the move to a branch) kept, removed or moved aside, dimmed under the headline."""
    from leaf_cli.cli.runs import report_lines, undo_details

    for line in undo_details(done) if isinstance(done, Undone) else report_lines(done):
        console.print(f"[dim]{markup_safe(line)}[/dim]")


def _ask_branch(console: Console, top: Path, default: str) -> str:
    """A branch name git accepts and no branch has yet, asked again until it is one."""
    while True:
        name = ask_text(console, "Branch name", default).strip()
        try:
            commits.check_new_branch(top, name)
            return name
        except LeafError as exc:
            console.print(f"[red]{markup_safe(str(exc))}[/red]")


def default_branch(top: Path, run: RunRecord) -> str:
    """`leaf/fix-add-subtracts` from the run's title (its first words, as a slug); `leaf/<run-id>` when the
    title gives no usable name; `-2`, `-3` appended while the name is taken."""
    words = re.findall(r"[a-z0-9]+", run.title.lower())[:_SLUG_WORDS]
    if words and words[0] != "fix":
        words.insert(0, "fix")
    base = "leaf/" + "-".join(words) if len(words) > 1 else f"leaf/{run.run_id}"
    name, n = base, 1
    while git(top, "rev-parse", "--verify", "-q", f"refs/heads/{name}", check=False).returncode == 0:
        n += 1
        name = f"{base}-{n}"
    return name
