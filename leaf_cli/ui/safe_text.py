"""Text the model controls, made safe to show on a terminal.

The model writes file contents, commands, reasoning and answers; any of it can hold terminal escapes
(`ESC[8m` hides the rest of a command in the permission prompt, `ESC]0;` retitles the window, `\\r`
overwrites a line) or bidirectional overrides that show code in another order than it runs. Before such
text is printed it goes through `plain` (escape sequences removed, other control characters shown as
U+FFFD); `markup_safe` also escapes rich's `[...]` markup for text put inside a markup string. leaf's own
styling is applied by rich after this, so it is kept.
"""

from __future__ import annotations

import re

_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"            # CSI: colours, cursor moves, erase, hide (ESC[8m)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: window title, hyperlinks, clipboard
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"       # DCS, SOS, PM, APC strings
    r"|\x1b[@-Z\\-_]"                       # two-byte escapes
    r"|\x9b[0-?]*[ -/]*[@-~]"               # 8-bit CSI
)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def plain(text: str) -> str:
    """`text` without terminal escape sequences; other control characters (but newline and tab) as U+FFFD."""
    return _CONTROLS.sub("\ufffd", _SEQUENCES.sub("", text))


def markup_safe(text: str) -> str:
    """`plain(text)` with rich markup escaped, for use inside a markup string."""
    from rich.markup import escape

    return escape(plain(text))
