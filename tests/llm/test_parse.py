"""parse_reply: Qwen3-Coder XML, Hermes JSON, reasoning, and the repairs small models need."""

from __future__ import annotations

from typing import Any

import pytest

from leaf_cli.llm.parse import parse_reply, split_reasoning

XML_TWO = (
    "<think>\nI should look first.\n</think>\n\nLet me look.\n\n<tool_call>\n<function=Read>\n"
    "<parameter=file_path>\nsrc/a.py\n</parameter>\n<parameter=offset>\n5\n</parameter>\n</function>\n</tool_call>\n"
    "<tool_call>\n<function=Bash>\n<parameter=command>\nls -la\n</parameter>\n<parameter=timeout>\n2.5\n</parameter>\n"
    "<parameter=env>\n{\"A\": \"1\"}\n</parameter>\n<parameter=args>\n[1, \"x\"]\n</parameter>\n</function>\n</tool_call>"
)


def test_qwen_xml_several_calls_typed_by_schema(tools: list[dict[str, Any]]) -> None:
    reply = parse_reply(XML_TWO, tools)
    assert reply.parse_error is None
    assert reply.reasoning == "I should look first."
    assert reply.content == "Let me look."
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("Read", {"file_path": "src/a.py", "offset": 5}),
        ("Bash", {"command": "ls -la", "timeout": 2.5, "env": {"A": "1"}, "args": [1, "x"]}),
    ]
    ids = [c.id for c in reply.tool_calls]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)


def test_xml_values_keep_inner_whitespace_and_booleans(tools: list[dict[str, Any]]) -> None:
    text = ("<tool_call>\n<function=Edit>\n<parameter=file_path>\na.py\n</parameter>\n<parameter=old_string>\n"
            "    x = 1\n\n</parameter>\n<parameter=new_string>\n\n  y\n</parameter>\n<parameter=replace_all>\nTrue\n"
            "</parameter>\n</function>\n</tool_call>")
    call = parse_reply(text, tools).tool_calls[0]
    assert call.arguments == {"file_path": "a.py", "old_string": "    x = 1\n", "new_string": "\n  y", "replace_all": True}


def test_string_parameter_that_looks_like_a_number_stays_a_string(tools: list[dict[str, Any]]) -> None:
    text = "<tool_call>\n<function=Bash>\n<parameter=command>\n42\n</parameter>\n</function>\n</tool_call>"
    assert parse_reply(text, tools).tool_calls[0].arguments == {"command": "42"}


def test_hermes_json_call(tools: list[dict[str, Any]]) -> None:
    text = 'Checking.\n<tool_call>\n{"name": "Read", "arguments": {"file_path": "a.py", "limit": 3}}\n</tool_call>'
    reply = parse_reply(text, tools)
    assert reply.content == "Checking."
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("Read", {"file_path": "a.py", "limit": 3})]


@pytest.mark.parametrize("text", [
    "<tool_call>\n{'name': 'Read', 'arguments': {'file_path': 'a.py',}}\n</tool_call>",  # quotes, trailing comma
    '<tool_call>\n{"name": "Read", "arguments": {"file_path": "a.py"\n',  # unclosed braces and tag
    '<tool_call>\n{"name": "Read", "arguments": "{\\"file_path\\": \\"a.py\\"}"}\n</tool_call>',  # args as string
    '```json\n{"name": "Read", "arguments": {"file_path": "a.py"}}\n```',
    '```tool\n{"name": "Read", "arguments": {"file_path": "a.py"}}\n```',
    '<tool_call>\n```json\n{"name": "Read", "arguments": {"file_path": "a.py"}}\n```\n</tool_call>',
    '{"name": "Read", "arguments": {"file_path": "a.py"}}',
    '{"name": "Read", "parameters": {"file_path": "a.py"}}',
    "<tool_call>\n<function=Read>\n<parameter=file_path>\na.py\n",  # XML cut off
    "<function=Read>\n<parameter=file_path>\na.py\n</parameter>\n</function>",  # XML without the wrapper
])
def test_repairs(text: str, tools: list[dict[str, Any]]) -> None:
    reply = parse_reply(text, tools)
    assert reply.parse_error is None, reply.parse_error
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("Read", {"file_path": "a.py"})]


@pytest.mark.parametrize("text", [
    "<tool_call>\nplease read the file\n</tool_call>",
    "<tool_call>\n</tool_call>",
    "I will call <tool_call",
])
def test_call_looking_but_unparseable_is_a_parse_error(text: str, tools: list[dict[str, Any]]) -> None:
    reply = parse_reply(text, tools)
    assert reply.tool_calls == [] and reply.parse_error


def test_plain_text_is_a_final_answer(tools: list[dict[str, Any]]) -> None:
    reply = parse_reply("The bug is fixed: add() now adds. {not a call}", tools)
    assert reply == type(reply)(content="The bug is fixed: add() now adds. {not a call}")


def test_json_final_answer_without_name_is_not_a_call(tools: list[dict[str, Any]]) -> None:
    reply = parse_reply('{"result": 5}', tools)
    assert reply.tool_calls == [] and reply.parse_error is None and reply.content == '{"result": 5}'


def test_reasoning_when_the_prompt_opened_think(tools: list[dict[str, Any]]) -> None:
    reply = parse_reply("step one\nstep two\n</think>\n\nDone.", tools, in_reasoning=True)
    assert (reply.reasoning, reply.content, reply.tool_calls) == ("step one\nstep two", "Done.", [])
    unclosed = parse_reply("still thinking", tools, in_reasoning=True)
    assert (unclosed.reasoning, unclosed.content) == ("still thinking", "")


def test_a_tool_call_before_think_closes_is_reasoning(tools: list[dict[str, Any]]) -> None:
    text = "I need the file.\n<tool_call>\n<function=Read>\n<parameter=file_path>\na.py\n</parameter>\n</function>\n</tool_call>\n</think>"
    reply = parse_reply(text, tools, in_reasoning=True)
    assert reply.reasoning.startswith("I need the file.\n<tool_call>") and reply.reasoning.endswith("</tool_call>")
    assert reply.tool_calls == [] and reply.parse_error is None and reply.content == ""


def test_split_reasoning_without_think_is_all_content() -> None:
    assert split_reasoning("hello") == (None, "hello")
    assert split_reasoning("<think>a</think>b") == ("a", "b")
    assert split_reasoning("a</think>b") == ("a", "b")
