"""The errors leaf raises on purpose, each with a message that says what is wrong and what to do.

A small tree in the style of httpx's: `LeafError` is the base a caller catches; `UsageError` is bad input
from the user (the CLI prints it as one line and exits 2); `InfraError` is the machinery failing under a
valid request (a lost Ray worker, Docker or bubblewrap not starting, git racing a gc): eval labels the
attempt with its `kind` and retries it where the executor retries, and the CLI prints one line and exits 1.
A plain `LeafError` still means bad input, as it always has.
"""

from __future__ import annotations


class LeafError(Exception):
    """Everything leaf raises on purpose; a plain one is bad input from the user (exit 2)."""


class UsageError(LeafError):
    """Bad input from the user: a missing file, an unknown model, a non-git folder... (exit 2)."""


class InfraError(LeafError):
    """An infrastructure failure, labelled by `kind` (`sandbox`, `docker`, `worker_lost`, `git`, ...)."""

    def __init__(self, message: str, kind: str = "harness") -> None:
        super().__init__(message)
        self.kind = kind


def exit_code(error: LeafError) -> int:
    """The CLI's exit status for `error`: 1 for an infrastructure failure, 2 for bad input."""
    return 1 if isinstance(error, InfraError) else 2
