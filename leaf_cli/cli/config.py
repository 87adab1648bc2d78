"""`leaf config show`: every effective setting and where it came from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from leaf_cli.cli.common import user_errors

config_app = typer.Typer(help="Leaf's settings: defaults < config.toml < .leaf.toml < LEAF_* < flags.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")


@config_app.command("show")
@user_errors
def show(
    workdir: Annotated[Optional[Path], typer.Option("--workdir", "-C", help="Repository whose .leaf.toml counts.", metavar="PATH")] = None,
) -> None:
    """Print each effective value and its origin (flag, env, a file, or default)."""
    from rich.console import Console
    from rich.table import Table

    from leaf_cli.config import load_settings, user_config_path
    from leaf_cli.repo.git import git

    here = (workdir or Path.cwd()).resolve()
    proc = git(here, "rev-parse", "--show-toplevel", check=False) if here.is_dir() else None
    top = Path(proc.stdout.decode().strip()) if proc is not None and proc.returncode == 0 else None
    settings, origins = load_settings({}, top)
    table = Table(box=None, pad_edge=False)
    for column in ("setting", "value", "from"):
        table.add_column(column)
    for name, value in settings.model_dump().items():
        shown = "****" if name == "api_key" and value else ("-" if value is None else str(value))
        table.add_row(name, shown, origins[name])
    console = Console(highlight=False)
    console.print(table)
    console.print(f"[dim]user file: {user_config_path()}   repository file: {top / '.leaf.toml' if top else '-'}[/dim]")
