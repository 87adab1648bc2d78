"""`leaf`: the root command. Sub-commands live one group per module and import heavy code lazily."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from leaf_cli.errors import LeafError, exit_code

app = typer.Typer(
    name="leaf",
    help="A local-first coding agent: `leaf fix \"issue text\"` inside a git repository.",
    no_args_is_help=True,
    # `leaf --install-completion` / `--show-completion` (bash, zsh, fish, PowerShell), as typer makes them.
    add_completion=True,
    # -h as well as --help, on every command (click passes it down to sub-commands).
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    # Plain click help: typer's rich help formatter alone costs ~100-400 ms of imports per `leaf --help`.
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    def of(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "not installed"

    typer.echo(f"leaf {of('leaf-agent')} (llama-cpp-python {of('llama-cpp-python')}, Python {sys.version.split()[0]})")
    raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_version,
                                                help="Print leaf's version and exit.")] = False) -> None:
    """A local-first coding agent: `leaf fix "issue text"` inside a git repository."""


def _register() -> None:
    """Attach every command group. Each module's top level imports only typer and the standard library."""
    from leaf_cli.cli import fix

    fix.register(app)
    for module_name in ("runs", "models", "doctor", "config", "chat", "eval", "tasks", "train"):
        __import__(f"leaf_cli.cli.{module_name}", fromlist=["register"]).register(app)


_register()


def run() -> None:
    """The console-script entry point. Commands wrap themselves with `common.user_errors`; this is the net."""
    try:
        app()
    except LeafError as exc:
        print(f"leaf: error: {exc}", file=sys.stderr)
        sys.exit(exit_code(exc))
