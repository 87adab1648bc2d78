"""`leaf runs` lists runs with status, exit reason and diff stat; `leaf undo` restores a run's start state."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Optional

import typer

from leaf_cli.cli.common import user_errors


def register(app: typer.Typer) -> None:
    app.command("runs")(runs)
    app.command("undo")(undo)


@user_errors
def runs(
    all_: Annotated[bool, typer.Option("--all", "-a", help="Runs of every repository, not only this one.")] = False,
    workdir: Annotated[Optional[Path], typer.Option("--workdir", "-C", help="The repository (default: here).", metavar="PATH")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Show at most this many.", metavar="N")] = 20,
) -> None:
    """List leaf's runs, newest first.

    Examples:

    \b
      leaf runs
      leaf runs --all
    """
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
    columns = ("run", "started", "status", "exit", "changes", "task") + (("repository",) if all_ else ())
    rows = []
    for r in records:
        started = dt.datetime.fromtimestamp(r.started_at).strftime("%Y-%m-%d %H:%M")
        changes = f"{r.files_changed} files +{r.insertions} -{r.deletions}" if r.after else "-"
        rows.append([r.run_id, started, r.status, r.exit_reason or "-", changes, r.title[:60], *([r.top] if all_ else [])])
    if not console.is_terminal:  # piped: one tab-separated line per run, never cut
        for row in rows:
            typer.echo("\t".join(row))
        return
    table = Table(box=None, pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold" if column in ("task", "repository") else "ellipsis",
                         no_wrap=column not in ("task", "repository"))
    for row in rows:
        table.add_row(*row)
    console.print(table)


@user_errors
def undo(
    run: Annotated[Optional[str], typer.Argument(help="Run id (or a unique prefix); default: the last run here.", metavar="RUN")] = None,
    force: Annotated[bool, typer.Option("--force", help="Restore even if files changed since the run.")] = False,
    workdir: Annotated[Optional[Path], typer.Option("--workdir", "-C", help="The repository (default: here).", metavar="PATH")] = None,
) -> None:
    """Put the repository back exactly as it was before a run: files, index, untracked files, HEAD, branch.

    Examples:

    \b
      leaf undo
      leaf undo RUN_ID
      leaf undo RUN_ID --force
    """
    from leaf_cli.errors import LeafError
    from leaf_cli.repo.lifecycle import undo_run
    from leaf_cli.repo.runs import list_runs, load_run

    if run is not None:
        record = load_run(run)
    else:
        here = (workdir or Path.cwd()).resolve()
        # Not through work_tree_root: after `rm -rf .git` this folder is no longer a work tree, yet undo must work.
        candidates = [r for r in list_runs() if here == Path(r.top) or Path(r.top) in here.parents]
        candidates = [r for r in candidates if r.status != "undone"] or candidates
        if not candidates:
            raise LeafError(f"no leaf run in {here}; `leaf runs --all` lists every run")
        record = candidates[0]
    report = undo_run(record, force=force)
    typer.echo(f"Restored {record.top} to its state before run {record.run_id}.", err=True)
    for line in report_lines(report):
        typer.echo(line, err=True)


def report_lines(report: object) -> list[str]:
    """What an undo removed, moved aside or could not make again, one line each (shared by the review and chat)."""
    from leaf_cli.ui.safe_text import plain

    lines = [f"Removed {name} (it pointed at {sha[:12]}; `git update-ref {name} {sha}` brings it back)."
             for name, sha in getattr(report, "dropped", [])]
    lines += [f"Moved aside {plain(src)} (the run made it; leaf does not delete what it did not record): now {plain(dst)}"
              for src, dst in getattr(report, "moved", [])]
    lines += [f"Removed {plain(rel)} (the run made it in a folder ignored at the start)."
              for rel in getattr(report, "removed_ignored", [])]
    lines += [f"Not made again: {plain(rel)} (a socket or device; leaf cannot recreate one)"
              for rel in getattr(report, "not_recreated", [])]
    return lines
