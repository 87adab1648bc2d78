"""`leaf runs` lists runs with their state, `leaf runs show` one run's diff and conversation, and `leaf undo`
puts the repository back as it was before a run."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from leaf_cli.cli.common import user_errors

runs_app = typer.Typer(invoke_without_command=True, no_args_is_help=False, add_completion=False)


def register(app: typer.Typer) -> None:
    app.add_typer(runs_app, name="runs")
    app.command("undo")(undo)


@runs_app.callback()
@user_errors
def runs(
    ctx: typer.Context,
    all_: Annotated[bool, typer.Option("--all", "-a", help="Runs of every repository, not only this one.")] = False,
    workdir: Annotated[Optional[Path], typer.Option("--workdir", "-C", help="The repository (default: here).", metavar="PATH")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Show at most this many.", metavar="N")] = 20,
) -> None:
    """List leaf's runs here, newest first, with their state: kept, committed, branched, undone (or running).

    Examples:

    \b
      leaf runs
      leaf runs --all
      leaf runs show RUN
    """
    if ctx.invoked_subcommand is not None:
        return
    from rich.console import Console
    from rich.table import Table

    from leaf_cli.repo.lifecycle import ensure_git_work_tree
    from leaf_cli.repo.runs import list_runs

    top = None if all_ else ensure_git_work_tree((workdir or Path.cwd()).resolve())
    records = list_runs(top)[:limit]
    console = Console(highlight=False)
    if not records:
        console.print("No runs yet." + ("" if all_ else " (`leaf runs --all` lists every repository's)"))
        return
    columns = ["run", "started", "state", "model", "exit", "changes", "task"] + (["repository"] if all_ else [])
    rows = [_row(r, all_) for r in records]
    if not console.is_terminal:  # piped: a header line, then one tab-separated line per run, never cut
        for row in [columns, *rows]:
            typer.echo("\t".join(row))
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold" if column in ("task", "repository") else "ellipsis",
                         no_wrap=column not in ("task", "repository"))
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _row(r: Any, all_: bool) -> list[str]:
    started = dt.datetime.fromtimestamp(r.started_at).strftime("%Y-%m-%d %H:%M")
    return [r.run_id, started, _state(r), r.model or "-", r.exit_reason or "-", changes_text(r), r.title[:60],
            *([r.top] if all_ else [])]


def _state(r: Any) -> str:
    if r.status == "branched" and r.branch_name:
        return f"branched ({r.branch_name})"
    return str(r.status)


def changes_text(r: Any) -> str:
    """`2 files +3 -1`, `1 file +1 -1`; `-` when the run never recorded its end."""
    if r.after is None:
        return "-"
    return f"{r.files_changed} file{'' if r.files_changed == 1 else 's'} +{r.insertions} -{r.deletions}"


@runs_app.command("show")
@user_errors
def show(run: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")]) -> None:
    """One run: its state, the change it made and the conversation with the model."""
    from rich.console import Console

    from leaf_cli.repo.runs import load_run
    from leaf_cli.ui.review import show_diff
    from leaf_cli.ui.runs_view import load_trajectory, show_conversation, show_header

    record = load_run(run)
    trajectory = load_trajectory(record)
    console = Console(highlight=False)
    show_header(console, record, changes_text(record))
    show_diff(console, trajectory.patch if trajectory is not None else "")
    show_conversation(console, trajectory)


@user_errors
def undo(
    run: Annotated[Optional[str], typer.Argument(help="Run id (or a unique prefix); default: the newest run here "
                                                       "that is not undone.", metavar="RUN")] = None,
    force: Annotated[bool, typer.Option("--force", help="Restore even if things changed since the run; what it "
                                                        "overwrites is kept under refs/leaf/saved/.")] = False,
    drop: Annotated[bool, typer.Option("--drop", help="Also let go of a committed or branched run's commit "
                                                      "(by default it stays reachable).")] = False,
    workdir: Annotated[Optional[Path], typer.Option("--workdir", "-C", help="The repository (default: here).", metavar="PATH")] = None,
) -> None:
    """Put the repository back as it was before a run: files, index, untracked files, HEAD, branch.

    A committed run's commit stays as refs/leaf/undone/RUN, a branched run's branch stays, unless --drop.

    Examples:

    \b
      leaf undo
      leaf undo RUN_ID --force
      leaf undo RUN_ID --drop
    """
    from leaf_cli.errors import LeafError
    from leaf_cli.repo.lifecycle import undo_run
    from leaf_cli.repo.runs import list_runs, load_run

    if run is not None:
        record = load_run(run)
    else:
        here = (workdir or Path.cwd()).resolve()
        # Not through work_tree_root: after `rm -rf .git` this folder is no longer a work tree, yet undo must work.
        mine = [r for r in list_runs() if here == Path(r.top) or Path(r.top) in here.parents]
        if not mine:
            raise LeafError(f"no leaf run in {here}; `leaf runs --all` lists every run")
        left = [r for r in mine if r.status != "undone"]
        if not left:
            raise LeafError(f"nothing left to undo in {mine[0].top}: all {len(mine)} of its runs are undone "
                            "(`leaf runs` lists them)")
        record = left[0]
    for line in undo_lines(record.run_id, undo_run(record, force=force, drop=drop)):
        typer.echo(line, err=True)


def undo_lines(run_id: str, done: Any) -> list[str]:
    """What an undo did, one line each: restored, then `undo_details`."""
    return [f"Undid run {run_id} ({done.was}): the repository is as it was before it.", *undo_details(done)]


def undo_details(done: Any) -> list[str]:
    """What stays reachable, what --force kept, then what the restore removed or moved aside (the review
    and chat print these under their own headline)."""
    lines = []
    if done.kept_commit is not None:
        name, sha = done.kept_commit
        short = name.removeprefix("refs/heads/")
        forget = f"git branch -D {short}" if name.startswith("refs/heads/") else f"git update-ref -d {name}"
        lines.append(f"Its commit {sha[:10]} stays as {short}: `git cherry-pick {sha[:10]}` brings the change back, "
                     f"`{forget}` lets it go.")
    if done.saved is not None:
        name, sha = done.saved
        lines.append(f"What --force overwrote is kept as {name} ({sha[:10]}; `git checkout {sha[:10]} -- .` puts "
                     "those files back).")
    return lines + report_lines(done.report)


def report_lines(report: Any) -> list[str]:
    """What a restore removed, moved aside or could not make again, one line each."""
    from leaf_cli.ui.safe_text import plain

    lines = [f"Removed {name} (it pointed at {sha[:12]}; `git update-ref {name} {sha}` brings it back)."
             for name, sha in report.dropped]
    lines += [f"Moved aside {plain(src)} (the run made it; leaf does not delete what it did not record): now {plain(dst)}"
              for src, dst in report.moved]
    lines += [f"Removed {plain(rel)} (the run made it in a folder ignored at the start)."
              for rel in report.removed_ignored]
    lines += [f"Not made again: {plain(rel)} (a socket or device; leaf cannot recreate one)"
              for rel in report.not_recreated]
    return lines
