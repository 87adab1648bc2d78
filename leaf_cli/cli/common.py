"""Small pieces every command group shares."""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, TypeVar

import typer

from leaf_cli.errors import LeafError, exit_code

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one clear line on stderr and return the Exit to raise."""
    print(f"leaf: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def user_errors(fn: F) -> F:
    """Turn a LeafError raised by a command into one line on stderr and its exit status (2 for bad input,
    1 for an infrastructure failure), no traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except LeafError as exc:
            raise fail(str(exc), exit_code(exc)) from None

    return wrapper  # type: ignore[return-value]
