"""`leaf`: the root command. Sub-commands live one group per module and import heavy code lazily."""

from __future__ import annotations

import sys

import typer

from leaf_cli.errors import LeafError

app = typer.Typer(
    name="leaf",
    help="A local-first coding agent: `leaf fix \"issue text\"` inside a git repository.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click help: typer's rich help formatter alone costs ~100-400 ms of imports per `leaf --help`.
    rich_markup_mode=None,
)


def _register() -> None:
    """Attach every command group. Each module's top level imports only typer and the standard library."""
    from leaf_cli.cli import fix

    fix.register(app)
    for module_name in ("runs", "models", "doctor", "config", "chat", "eval", "tasks", "train"):
        try:
            module = __import__(f"leaf_cli.cli.{module_name}", fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != f"leaf_cli.cli.{module_name}":
                raise
            continue  # a command group not built yet
        module.register(app)


_register()


def run() -> None:
    """The console-script entry point. Commands wrap themselves with `common.user_errors`; this is the net."""
    try:
        app()
    except LeafError as exc:
        print(f"leaf: error: {exc}", file=sys.stderr)
        sys.exit(2)
