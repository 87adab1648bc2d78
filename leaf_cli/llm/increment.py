"""The prompt text a token-level engine appends to a conversation's token log, found by incremental rendering.

The log holds the rendered prefix and the exact sampled tokens of each assistant turn. What comes next (the
turn's closing text, tool results, the next generation prompt) is the difference between the template's
rendering of the messages with and without the new ones: the earlier rendering must be an exact prefix of
the later one, else `PrefixMismatch`. One exception is allowed: a new *user* message may make a template
rewrite earlier turns (Qwen3.5 drops the reasoning of turns before the latest user query). The log keeps what
the model actually saw; the new text is then located after the end token that closes the last assistant turn.
"""

from __future__ import annotations

from typing import Any

from leaf_cli.llm.engine import EngineError
from leaf_cli.llm.messages import Message
from leaf_cli.llm.template import ChatTemplate

_PROBE = "\u2063leaf-probe\u2063"


class PrefixMismatch(EngineError):
    """The template renders the earlier conversation differently once new messages follow: no exact append."""


def first_prompt(template: ChatTemplate, messages: list[Message], tools: list[dict[str, Any]],
                 enable_thinking: bool) -> str:
    """The whole conversation rendered, ending in the generation prompt."""
    return template.render([m.to_template() for m in messages], tools, add_generation_prompt=True,
                           enable_thinking=enable_thinking)


def next_prompt(template: ChatTemplate, messages: list[Message], covered: int, tools: list[dict[str, Any]],
                enable_thinking: bool, reply_closed: bool) -> str:
    """Text to append after the sampled tokens of the assistant turn `messages[covered - 1]`.

    `reply_closed`: the sampled tokens ended with the end token; if not (a cut reply) the text starts with it.
    """
    if covered < 1 or covered > len(messages) or messages[covered - 1].role != "assistant":
        raise PrefixMismatch(f"token log covers {covered} messages, but message {covered - 1} is not the "
                             "assistant reply the log ends with")
    dicts = [m.to_template() for m in messages]
    kwargs = {"add_generation_prompt": True, "enable_thinking": enable_thinking}
    before = template.render(dicts[:covered], tools, add_generation_prompt=False, enable_thinking=enable_thinking)
    after = template.render(dicts, tools, **kwargs)
    end = template.end_token
    closing = before.rfind(end)
    if closing == -1:
        raise PrefixMismatch(f"the template does not end an assistant turn with {end!r}")
    if after.startswith(before):
        text = before[closing + len(end):] + after[len(before):]
    elif any(m.role == "user" for m in messages[covered:]):
        text = after[_end_of_last_reply(template, dicts, covered, tools, after, kwargs):]
    else:
        at = next((i for i, (a, b) in enumerate(zip(before, after)) if a != b), min(len(before), len(after)))
        raise PrefixMismatch(f"the chat template re-renders earlier messages differently (first difference at "
                             f"character {at}: {before[at:at + 40]!r} vs {after[at:at + 40]!r})")
    return text if reply_closed else end + text


def _end_of_last_reply(template: ChatTemplate, dicts: list[dict[str, Any]], covered: int,
                       tools: list[dict[str, Any]], after: str, kwargs: dict[str, Any]) -> int:
    """Where, in `after`, the text following the end token of the last covered assistant turn starts."""
    probed = [dict(d) for d in dicts]
    probed[covered]["content"] = _PROBE + (probed[covered].get("content") or "")
    probe = template.render(probed, tools, **kwargs)
    diverge = next((i for i, (a, b) in enumerate(zip(after, probe)) if a != b), min(len(after), len(probe)))
    closing = after.rfind(template.end_token, 0, diverge)
    if closing == -1 or _PROBE not in probe:
        raise PrefixMismatch("cannot locate the new messages in the rendered conversation")
    return closing + len(template.end_token)
