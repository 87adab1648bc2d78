"""Prompt-evaluation progress, reported by an engine to whoever runs it.

A context variable rather than a parameter: the `Engine` protocol stays as it is, an engine that cannot say
how far it got (a server) reports nothing, and each thread of an eval sees only its own callback.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Any, Callable, Iterator, Sequence

OnPrefill = Callable[[int, int], None]
"""Called with (prompt tokens evaluated so far, tokens this call evaluates in all)."""

_reporter: ContextVar[OnPrefill | None] = ContextVar("leaf_prefill_reporter", default=None)


@contextlib.contextmanager
def reporting_prefill(callback: OnPrefill | None) -> Iterator[None]:
    """Route the progress of prompt evaluations made inside the block to `callback`."""
    token = _reporter.set(callback)
    try:
        yield
    finally:
        _reporter.reset(token)


def eval_reporting(llm: Any, tokens: Sequence[int], done: int, total: int) -> None:
    """`llm.eval(tokens)` in its own n_batch chunks (the same decode calls `Llama.eval` makes), reporting
    `done + evaluated` of `total` after each chunk, and once before the first."""
    report = _reporter.get()
    if report is None or not tokens:
        llm.eval(tokens)
        return
    step = max(1, int(llm.n_batch))
    report(done, total)
    for start in range(0, len(tokens), step):
        chunk = tokens[start:start + step]
        llm.eval(chunk)
        report(done + start + len(chunk), total)
