"""Round trip against the real Qwen3.5 template: render, parse the assistant turns with leaf, render again."""

from __future__ import annotations

import re
from typing import Any

from leaf_cli.llm.messages import Message, ToolCall
from leaf_cli.llm.parse import parse_reply
from leaf_cli.llm.template import ChatTemplate


def conversation() -> list[Message]:
    call = lambda i, name, args: ToolCall(id=f"c{i}", name=name, arguments=args)  # noqa: E731
    return [
        Message(role="system", content="You are a coding agent."),
        Message(role="user", content="Fix add() in calc.py."),
        Message(role="assistant", reasoning_content="Look at the file first.\nThen test.", content="Reading it.",
                tool_calls=[call(1, "Read", {"file_path": "calc.py", "offset": 1, "limit": 40}),
                            call(2, "Bash", {"command": "pytest -q\n", "timeout": 30.5,
                                             "env": {"CI": "1"}, "args": ["-x", 2]})]),
        Message(role="tool", content="calc.py\n1. def add(a, b):\n2.     return a - b", tool_call_id="c1"),
        Message(role="tool", content="Exit code: 1\nSTDOUT:\nF\nSTDERR:\n", tool_call_id="c2"),
        Message(role="assistant", reasoning_content="Subtraction: wrong operator.", content="",
                tool_calls=[call(3, "Edit", {"file_path": "calc.py", "old_string": "    return a - b\n",
                                             "new_string": "    return a + b\n", "replace_all": False})]),
        Message(role="tool", content="Edited calc.py (1 replacement).", tool_call_id="c3"),
        Message(role="assistant", reasoning_content="Done.", content="Fixed: add() now adds."),
    ]


def assistant_parts(rendered: str) -> list[str]:
    return re.findall(r"<\|im_start\|>assistant\n(.*?)<\|im_end\|>", rendered, re.S)


def test_render_parse_render_is_byte_identical(qwen_template_source: str, tools: list[dict[str, Any]]) -> None:
    template = ChatTemplate(qwen_template_source)
    messages = conversation()
    first = template.render([m.to_template() for m in messages], tools)
    parts = assistant_parts(first)
    assert len(parts) == 3 and parts[0].startswith("<think>\nLook at the file first.")
    rebuilt = []
    replies = iter(parts)
    for message in messages:
        if message.role != "assistant":
            rebuilt.append(message)
            continue
        reply = parse_reply(next(replies), tools)
        assert reply.parse_error is None
        assert [(c.name, c.arguments) for c in reply.tool_calls] == [(c.name, c.arguments) for c in message.tool_calls]
        rebuilt.append(Message(role="assistant", content=reply.content, reasoning_content=reply.reasoning,
                               tool_calls=reply.tool_calls))
    second = template.render([m.to_template() for m in rebuilt], tools)
    assert second == first


def test_generated_reply_round_trips_through_the_generation_prompt(qwen_template_source: str,
                                                                   tools: list[dict[str, Any]]) -> None:
    """A reply sampled after `<think>\\n` parses with in_reasoning=True and renders back to the same text."""
    template = ChatTemplate(qwen_template_source)
    messages = conversation()[:2]
    prompt = template.render([m.to_template() for m in messages], tools, add_generation_prompt=True)
    sampled = ("Check the file.\n</think>\n\nLooking.\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\n"
               "calc.py\n</parameter>\n</function>\n</tool_call>")
    reply = parse_reply(sampled, tools, in_reasoning=True)
    done = messages + [Message(role="assistant", content=reply.content, reasoning_content=reply.reasoning,
                               tool_calls=reply.tool_calls)]
    assert template.render([m.to_template() for m in done], tools) == prompt + sampled + "<|im_end|>\n"
