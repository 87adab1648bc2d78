"""Observation size limits, and cutting text to them while it streams instead of after buffering it."""

from __future__ import annotations

READ_CHARS = 20_000
"""Read's whole observation is cut here (the harness's LEAF_TOOL_OUTPUT_CHARS)."""
BASH_CHARS = 30_000
"""Bash's whole observation is cut here (LEAF_BASH_OUTPUT_CHARS)."""
GLOB_LIMIT = 1_000
"""Glob lists at most this many paths (LEAF_GLOB_LIMIT)."""


def truncation_marker(dropped: int) -> str:
    return f"\n[truncated {dropped} chars]"


def truncate(text: str, limit: int) -> str:
    """The harness's cut: the first `limit` chars, then `\\n[truncated K chars]`."""
    if len(text) <= limit:
        return text
    return text[:limit] + truncation_marker(len(text) - limit)


def fit(text: str, total: int, budget: int) -> str:
    """`text` (the head of a stream `total` chars long) cut so that it plus its marker fit in `budget` chars."""
    if total <= budget:
        return text
    keep = max(0, budget - len(truncation_marker(total)))
    return text[:keep] + truncation_marker(total - keep)


class HeadBuffer:
    """Keeps the first `cap` chars of a stream and only counts the rest, so memory does not grow with output."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._parts: list[str] = []
        self._kept = 0
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        room = self.cap - self._kept
        if room > 0 and text:
            piece = text[:room]
            self._parts.append(piece)
            self._kept += len(piece)

    def count(self, n: int) -> None:
        """Account for `n` chars that are known to fall past the cap (they are never materialised)."""
        self.total += n

    @property
    def full(self) -> bool:
        return self._kept >= self.cap

    @property
    def text(self) -> str:
        """The kept head (at most `cap` chars)."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""
