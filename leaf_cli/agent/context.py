"""Counting the context as FrogNano's harness counted it, for the `max_context` limit.

After each turn with tool calls its loop took the server's usage total (prompt + completion; when the server
gave none, a count of all messages) and added the tokens of the turn's tool messages, serialized as compact
JSON. It counted with the model's tokenizer where it had one (a Qwen template cannot render tool messages
alone, so that count fell to the tokenizer's encoding of the JSON), else one token per 4 UTF-8 bytes. leaf
counts with the engine's tokenizer when the engine offers `count_tokens(text)`, else by the same 4-byte rule.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable

from leaf_cli.llm.messages import Message

BYTES_PER_TOKEN = 4
"""The harness's last-resort estimate: one token per this many UTF-8 bytes of the JSON."""


class TokenCounter:
    def __init__(self, engine: object) -> None:
        counter = getattr(engine, "count_tokens", None)
        self._count: Callable[[str], int] = counter if callable(counter) else _estimate

    def messages(self, messages: list[Message]) -> int:
        """The whole conversation, when the server reported no usage."""
        return self._count(_compact([m.to_openai() for m in messages]))

    def tool_results(self, results: list[Message]) -> int:
        """A turn's tool messages, in the shape the harness appended them."""
        if not results:
            return 0
        shaped = [{"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content} for m in results]
        return self._count(_compact(shaped))


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _estimate(text: str) -> int:
    return math.ceil(len(text.encode("utf-8", errors="surrogatepass")) / BYTES_PER_TOKEN)
