"""Route streamed reply text to `on_delta` as reasoning or content, following the `<think>` state.

Text arrives token by token, so a tag can be split across pieces: the tail that could still become a tag is
held back until the next piece (or `finish`) decides. `<think>` opens reasoning, `</think>` closes it, and a
`<tool_call>` inside reasoning also ends it (as `parse.split_reasoning` reads the reply).
"""

from __future__ import annotations

from leaf_cli.llm.engine import OnDelta

_TAGS = ("<think>", "</think>", "<tool_call>")


class ThinkStreamer:
    def __init__(self, on_delta: OnDelta | None, in_reasoning: bool) -> None:
        self.on_delta = on_delta
        self.in_reasoning = in_reasoning
        self.pending = ""

    def feed(self, text: str) -> None:
        """Take the next piece of text; emit what is certain."""
        if self.on_delta is None:
            return
        self.pending += text
        while True:
            hit = min(((self.pending.find(t), t) for t in _TAGS if t in self.pending), default=None)
            if hit is None:
                break
            index, tag = hit
            self._emit(self.pending[:index])
            self.pending = self.pending[index + len(tag):]
            if tag == "<tool_call>":
                self.in_reasoning = False
                self._emit(tag)
            else:
                self.in_reasoning = tag == "<think>"
        keep = _partial_tag_length(self.pending)
        self._emit(self.pending[: len(self.pending) - keep])
        self.pending = self.pending[len(self.pending) - keep:]

    def finish(self) -> None:
        """The reply ended: flush what was held back."""
        if self.on_delta is not None:
            self._emit(self.pending)
        self.pending = ""

    def _emit(self, text: str) -> None:
        if text and self.on_delta is not None:
            self.on_delta("reasoning" if self.in_reasoning else "content", text)


def _partial_tag_length(text: str) -> int:
    """How many trailing characters of `text` could be the start of a tag."""
    for length in range(min(len(text), max(map(len, _TAGS)) - 1), 0, -1):
        if any(tag.startswith(text[-length:]) for tag in _TAGS):
            return length
    return 0
