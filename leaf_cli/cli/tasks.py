"""`leaf tasks check | export`: inspect a task file, or write it out in another harness's layout."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from leaf_cli.cli.common import fail, user_errors

tasks_app = typer.Typer(help="Work with task files (SWE-bench-style JSON lines).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(tasks_app, name="tasks")


@tasks_app.command("check")
@user_errors
def check(tasks: Annotated[Path, typer.Argument(help="The task file.", metavar="TASKS")]) -> None:
    """Read every line; list the malformed ones (exit 1 when there are any)."""
    from leaf_cli.tasks import load_tasks

    task_file = load_tasks(tasks)
    for error in task_file.errors:
        typer.echo(f"{error}", err=True)
    typer.echo(f"{len(task_file.tasks)} task(s), {len(task_file.errors)} malformed line(s)")
    if task_file.errors:
        raise typer.Exit(1)


@tasks_app.command("export")
@user_errors
def export(
    tasks: Annotated[Path, typer.Argument(help="The task file.", metavar="TASKS")],
    harbor: Annotated[Optional[Path], typer.Option("--harbor", help="Write the Harbor task layout into this folder.", metavar="PATH")] = None,
) -> None:
    """Export tasks for another harness (Harbor: instruction.md, task.toml, Dockerfile, tests, solution)."""
    from leaf_cli.tasks import export_harbor, load_tasks

    if harbor is None:
        raise fail("choose a format: --harbor DIR")
    task_file = load_tasks(tasks)
    for error in task_file.errors:
        typer.echo(f"leaf: warning: skipped task line {error}", err=True)
    folders = export_harbor(task_file.tasks, harbor, task_file.base_dir)
    typer.echo(f"wrote {len(folders)} Harbor task(s) to {harbor}")
