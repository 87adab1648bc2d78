"""Observation size limits, cutting text to them while it streams instead of after buffering it, and
names that are not UTF-8 shown as the model saw them in training."""

from __future__ import annotations

import functools
import re
from typing import Any, Callable

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


_OTHER_SURROGATES = re.compile("[\ud800-\udc7f\udd00-\udfff]")
"""Lone surrogates that are not Python's names for undecodable bytes (those are U+DC80 to U+DCFF)."""


def as_shown(text: str) -> str:
    """`text` as FrogNano's harness's output reached the model. Python names a byte of a file name that is not
    UTF-8 by a lone surrogate (U+DC80 to U+DCFF); the harness's runner printed it as that byte and the runtime
    decoded its output with replacement, so each invalid sequence became U+FFFD (and escaped bytes that form
    valid UTF-8 became those characters). Any other lone surrogate is one U+FFFD. A text the harness wrote
    through `repr` (an OS error's file name) holds `\\udcff` as six ASCII characters, and keeps them."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    text = _OTHER_SURROGATES.sub("\ufffd", text)
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def observed(run: Callable[[Any, Any], str]) -> Callable[[Any, Any], str]:
    """A file tool's run function whose text, and the message of any failure it raises, are `as_shown`."""

    @functools.wraps(run)
    def shown_run(args: Any, workspace: Any) -> str:
        try:
            return as_shown(run(args, workspace))
        except Exception as exc:
            message = str(exc)
            shown = as_shown(message)
            if shown == message:
                raise
            raise _with_message(exc, shown) from exc

    return shown_run


def _with_message(exc: Exception, message: str) -> Exception:
    """A failure observed as `exc` would be (registry.py), with `message` instead of its own."""
    from leaf_cli.tools.base import ToolFailure
    from leaf_cli.tools.workspace import OutsideWorkspaceError

    if isinstance(exc, OutsideWorkspaceError):
        return OutsideWorkspaceError(message)
    return ToolFailure(getattr(exc, "kind", type(exc).__name__), message)
