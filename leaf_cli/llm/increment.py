"""What a token-level engine adds to a conversation's token log each turn, found by incremental rendering.

The log holds the rendered prefix and the exact sampled tokens of each assistant turn. Within a run of tool
turns, what comes next (the reply's closing text, the tool results, the next generation prompt) is the
difference between the template's rendering of the messages with and without the new ones: the earlier
rendering must be an exact prefix of the later one, else `PrefixMismatch`.

At a user-message boundary (a format-error message, a `leaf chat` follow-up, `--continue`) a template may
rewrite earlier turns: Qwen3.5 drops the reasoning of assistant turns before the latest user query. Then the
whole conversation is rendered canonically (`Extension.rebase`): the engine re-tokenizes it and keeps its
log only up to the first token that differs, so the model sees what the template produces, as it did in
training behind an OpenAI-compatible server. Measured in `bench/bench_prefill.py` (one re-prefill of the
history after the first reply, from a checkpoint, on the hybrid).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from leaf_cli.llm.engine import EngineError
from leaf_cli.llm.messages import Message

Render = Callable[[list[Message], list[dict[str, Any]], bool, bool], str]
"""(messages, tools, add_generation_prompt, enable_thinking) -> the prompt text."""


class PrefixMismatch(EngineError):
    """The template renders the earlier conversation differently once new messages follow: no exact append."""


class Extension(NamedTuple):
    """The text to append to the log; with `rebase`, the whole conversation to replace the log with."""

    text: str
    rebase: bool = False


def first_prompt(render: Render, messages: list[Message], tools: list[dict[str, Any]], enable_thinking: bool) -> str:
    """The whole conversation rendered, ending in the generation prompt."""
    return render(messages, tools, True, enable_thinking)


def next_prompt(render: Render, messages: list[Message], covered: int, tools: list[dict[str, Any]],
                enable_thinking: bool, end: str, reply_closed: bool) -> Extension:
    """What follows the sampled tokens of the assistant turn `messages[covered - 1]`.

    `end` is the text that closes an assistant turn; `reply_closed`: the sampled tokens ended with it (if not,
    a cut reply, the appended text starts with it).
    """
    if covered < 1 or covered > len(messages) or messages[covered - 1].role != "assistant":
        raise PrefixMismatch(f"token log covers {covered} messages, but message {covered - 1} is not the "
                             "assistant reply the log ends with")
    after = render(messages, tools, True, enable_thinking)
    before = render(messages[:covered], tools, False, enable_thinking)
    closing = before.rfind(end)
    if closing == -1:
        raise PrefixMismatch(f"the template does not end an assistant turn with {end!r}")
    if not after.startswith(before):
        if any(m.role == "user" for m in messages[covered:]):
            return Extension(after, rebase=True)
        at = next((i for i, (a, b) in enumerate(zip(before, after)) if a != b), min(len(before), len(after)))
        raise PrefixMismatch(f"the chat template re-renders earlier messages differently (first difference at "
                             f"character {at}: {before[at:at + 40]!r} vs {after[at:at + 40]!r})")
    text = before[closing + len(end):] + after[len(before):]
    return Extension(text if reply_closed else end + text)
