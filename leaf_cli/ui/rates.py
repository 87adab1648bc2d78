"""The clock of one assistant turn: when the prompt evaluation began and ended, when tokens arrived.

Prompt and generation rates are kept apart: dividing the output tokens by the whole turn (the prompt's
evaluation included) understates generation several times over on a long first prompt.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TurnClock:
    started: float
    prefill_started: float | None = None
    prefill_done: float | None = None
    prefill_tokens: int = 0
    first_token: float | None = None
    streamed: int = 0

    def prefill(self, done: int, total: int, now: float) -> None:
        if self.prefill_started is None:
            self.prefill_started = now
        self.prefill_tokens = total
        if done >= total:
            self.prefill_done = now

    def delta(self, now: float) -> None:
        if self.first_token is None:
            self.first_token = now
        self.streamed += 1

    def generation_started(self) -> float | None:
        """The engine's own word (prefill done) where it gave one, else the first streamed text."""
        return self.prefill_done if self.prefill_done is not None else self.first_token

    def prompt_rate(self, evaluated: int | None = None) -> float | None:
        """Prompt tokens per second of evaluation. Without progress reports (a server), the time to the first
        streamed text stands for it, and `evaluated` (prompt minus cached tokens) for the count."""
        if self.prefill_started is not None and self.prefill_done is not None:
            return _rate(self.prefill_tokens, self.prefill_done - self.prefill_started)
        if self.first_token is not None and evaluated is not None:
            return _rate(evaluated, self.first_token - self.started)
        return None

    def generation_rate(self, tokens: int | None, now: float) -> float | None:
        """`tokens` generated per second since generation began (None: not yet known)."""
        began = self.generation_started()
        if began is None or tokens is None:
            return None
        return _rate(tokens, now - began)


def _rate(tokens: int, seconds: float) -> float | None:
    return tokens / seconds if seconds > 0 and tokens > 0 else None


def show_rate(rate: float | None) -> str:
    if rate is None:
        return "–"
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.1f}"
