"""Incremental rendering: the text appended after an assistant turn, with the prefix verified."""

from __future__ import annotations

from typing import Any

import pytest

from leaf_cli.llm.increment import PrefixMismatch, first_prompt, next_prompt
from leaf_cli.llm.messages import Message, ToolCall
from leaf_cli.llm.stream import ThinkStreamer
from leaf_cli.llm.template import ChatTemplate


def start() -> list[Message]:
    return [Message(role="system", content="S"), Message(role="user", content="U")]


def reply() -> Message:
    call = ToolCall(id="c", name="Read", arguments={"file_path": "a.py"})
    return Message(role="assistant", content="ok", reasoning_content="r", tool_calls=[call])


def append(template: ChatTemplate, messages: list[Message], covered: int, tools: list[dict[str, Any]],
           reply_closed: bool = True) -> str:
    ext = next_prompt(template.render_messages, messages, covered, tools, True, template.end_token, reply_closed)
    assert not ext.rebase
    return ext.text


def test_tool_results_and_generation_prompt(qwen_template_source: str, tools: list[dict[str, Any]]) -> None:
    template = ChatTemplate(qwen_template_source)
    messages = start() + [reply(), Message(role="tool", content="A"), Message(role="tool", content="B")]
    text = append(template, messages, 3, tools)
    assert text == ("\n<|im_start|>user\n<tool_response>\nA\n</tool_response>\n<tool_response>\nB\n"
                    "</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n")
    whole = template.render([m.to_template() for m in messages], tools, add_generation_prompt=True)
    assert whole.endswith(text)
    assert append(template, messages, 3, tools, reply_closed=False) == "<|im_end|>" + text


def test_user_message_is_a_canonical_rerender(qwen_template_source: str, tools: list[dict[str, Any]]) -> None:
    """Qwen3.5 drops the reasoning of turns before the latest user query: the engine gets the whole canonical
    rendering to re-tokenize, so the model sees what its template produces."""
    template = ChatTemplate(qwen_template_source)
    messages = start() + [reply(), Message(role="user", content="Format error: try again")]
    ext = next_prompt(template.render_messages, messages, 3, tools, True, template.end_token, True)
    assert ext.rebase
    assert ext.text == template.render_messages(messages, tools, True, True)
    assert "<think>\nr\n</think>" not in ext.text  # the earlier reasoning is gone, as the template renders it
    assert ext.text.endswith("<|im_start|>user\nFormat error: try again<|im_end|>\n<|im_start|>assistant\n<think>\n")


def test_rewrite_without_a_user_message_is_refused(tools: list[dict[str, Any]]) -> None:
    # A template that numbers turns from the end: appending anything changes every earlier turn.
    source = ("{% for m in messages %}<|im_start|>{{ messages|length - loop.index }}{{ m.content }}<|im_end|>\n"
              "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    messages = start() + [reply(), Message(role="tool", content="A")]
    with pytest.raises(PrefixMismatch, match="re-renders earlier messages"):
        append(ChatTemplate(source), messages, 3, tools)


def test_log_must_end_with_an_assistant_turn(tools: list[dict[str, Any]]) -> None:
    with pytest.raises(PrefixMismatch, match="not the assistant reply"):
        append(ChatTemplate(None), start(), 2, tools)


def test_first_prompt_ends_with_generation_prompt(tools: list[dict[str, Any]]) -> None:
    assert first_prompt(ChatTemplate(None).render_messages, start(), tools, True).endswith("<|im_start|>assistant\n")


def test_streamer_splits_reasoning_and_content_across_token_pieces() -> None:
    seen: list[tuple[str, str]] = []
    streamer = ThinkStreamer(lambda kind, text: seen.append((kind, text)), in_reasoning=True)
    for piece in ["thin", "king</th", "ink>", "\n\nAns", "wer <", "tool_call>", "x"]:
        streamer.feed(piece)
    streamer.finish()
    joined: dict[str, str] = {}
    for kind, text in seen:
        joined[kind] = joined.get(kind, "") + text
    assert joined == {"reasoning": "thinking", "content": "\n\nAnswer <tool_call>x"}


def test_rebased_log_keeps_the_common_prefix_and_the_old_log() -> None:
    from leaf_cli.llm.messages import TokenLog

    log = TokenLog()
    log.append_prompt([1, 2, 3])
    log.append_sampled([4, 5, 6], [-0.1, -0.2, -0.3], version=2)
    log.append_prompt([7])
    new = log.rebased([1, 2, 3, 4, 9, 7, 8])
    assert new.ids == [1, 2, 3, 4, 9, 7, 8]
    assert new.mask == [0, 0, 0, 1, 0, 0, 0] and new.logprobs[3] == -0.1 and new.versions[3] == 2
    assert new.superseded == [log.model_copy(update={"superseded": []})]
    assert log.rebased(log.ids + [10]).superseded == []  # nothing sampled was lost: no copy kept


def test_forced_tokens_are_prompt_in_the_log() -> None:
    from leaf_cli.llm.messages import TokenLog

    log = TokenLog()
    log.append_sampled([4, 5, 6, 7], [-0.5, -0.1, -0.2, -0.3], version=1, forced=frozenset({1, 2}))
    assert log.mask == [1, 0, 0, 1] and log.logprobs == [-0.5, 0.0, 0.0, -0.3] and log.versions == [1, -1, -1, 1]
