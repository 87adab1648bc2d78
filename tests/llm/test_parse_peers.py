"""Reply parsing against the cases of the servers' own parser tests, as a table of our own.

Sources: "vllm": vLLM `tests/tool_use/test_qwen3coder_tool_parser.py` (non-streaming extraction, type
conversion) and its parser's value rules (null, float, bool, literal); "sglang": SGLang
`test/srt/.../test_qwen3_coder_detector.py` (non-streaming `detect_and_parse`); "issue": the cases the
protocol issue lists from the peers (reasoning before `</think>`, markup inside a parameter value, an
unrendered template name), written from its description. Each row: the model's text (after the
generation prompt, which opens `<think>` when `thinking`), the calls extracted, and the content left.
"""

from __future__ import annotations

from typing import Any

import pytest

from leaf_cli.llm.parse import parse_reply

WEATHER = {"type": "function", "function": {"name": "get_current_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "state": {"type": "string"}, "unit": {"type": "string", "enum": ["fahrenheit", "celsius"]}},
    "required": ["city", "state"]}}}
AREA = {"type": "function", "function": {"name": "calculate_area", "parameters": {"type": "object", "properties": {
    "shape": {"type": "string"}, "dimensions": {"type": "object"}, "precision": {"type": "integer"}}}}}
TYPES = {"type": "function", "function": {"name": "test_types", "parameters": {"type": "object", "properties": {
    "int_param": {"type": "integer"}, "float_param": {"type": "float"}, "bool_param": {"type": "boolean"},
    "str_param": {"type": "string"}, "obj_param": {"type": "object"}, "num_param": {"type": "number"},
    "arr_param": {"type": "array"}}}}}
WRITE = {"type": "function", "function": {"name": "Write", "parameters": {"type": "object", "properties": {
    "file_path": {"type": "string"}, "content": {"type": "string"}}, "required": ["file_path", "content"]}}}
BASH = {"type": "function", "function": {"name": "Bash", "parameters": {"type": "object", "properties": {
    "command": {"type": "string"}, "timeout": {"type": "number"}}, "required": ["command"]}}}
SG_WEATHER = {"type": "function", "function": {"name": "sg_weather", "parameters": {"type": "object", "properties": {
    "location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer"}}, "required": ["location"]}}}
SQL = {"type": "function", "function": {"name": "sql_interpreter", "parameters": {"type": "object", "properties": {
    "query": {"type": "string"}, "dry_run": {"type": "boolean"}}}}}
TODO = {"type": "function", "function": {"name": "TodoWrite", "parameters": {"type": "object", "properties": {
    "todos": {"type": "array", "items": {"type": "object"}}}}}}
TOOLS = [WEATHER, AREA, TYPES, WRITE, BASH, SG_WEATHER, SQL, TODO]


def sg(name: str, **params: str) -> str:
    """SGLang's test layout: values without the template's surrounding newlines."""
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


def xml(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


DALLAS = xml("get_current_weather", city="Dallas", state="TX", unit="fahrenheit")
ORLANDO = xml("get_current_weather", city="Orlando", state="FL", unit="fahrenheit")
DALLAS_ARGS = {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}
FILE_WITH_MARKUP = 'print("<tool_call>")\n# <parameter=x> and <function=y> are text here\n</tool_call> too'

# (source, id, text, thinking, expected calls as (name, arguments), expected content)
CASES: list[tuple[str, str, str, bool, list[tuple[str, dict[str, Any]]], str]] = [
    ("vllm", "no_tools", "This is a test response without any tool calls", False, [],
     "This is a test response without any tool calls"),
    ("vllm", "single_tool", DALLAS, False, [("get_current_weather", DALLAS_ARGS)], ""),
    ("vllm", "single_tool_with_content", "Sure! Let me check the weather for you." + DALLAS, False,
     [("get_current_weather", DALLAS_ARGS)], "Sure! Let me check the weather for you."),
    ("vllm", "single_tool_multiline_param", xml("calculate_area", shape="rectangle",
                                                dimensions='{"width": 10, \n "height": 20}', precision="2"), False,
     [("calculate_area", {"shape": "rectangle", "dimensions": {"width": 10, "height": 20}, "precision": 2})], ""),
    ("vllm", "parallel_tools", DALLAS + "\n" + ORLANDO, False,
     [("get_current_weather", DALLAS_ARGS), ("get_current_weather", {"city": "Orlando", "state": "FL",
                                                                     "unit": "fahrenheit"})], ""),
    ("vllm", "tool_with_typed_params", "Let me calculate that area for you." + xml(
        "calculate_area", shape="circle", dimensions='{"radius": 15.5}', precision="3"), False,
     [("calculate_area", {"shape": "circle", "dimensions": {"radius": 15.5}, "precision": 3})],
     "Let me calculate that area for you."),
    ("vllm", "fallback_no_tags", "<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n"
     "<parameter=state>\nTX\n</parameter>\n</function>", False,
     [("get_current_weather", {"city": "Dallas", "state": "TX"})], ""),
    ("vllm", "type_conversion", xml("test_types", int_param="42", float_param="3.14", bool_param="true",
                                    str_param="hello world", obj_param='{"key": "value"}'), False,
     [("test_types", {"int_param": 42, "float_param": 3.14, "bool_param": True, "str_param": "hello world",
                      "obj_param": {"key": "value"}})], ""),
    # vLLM's own test_string_null_value_preserved: a string parameter keeps the text `null` (any case).
    ("vllm", "null_for_typed_param", xml("test_types", int_param="null", str_param="NULL"), False,
     [("test_types", {"int_param": None, "str_param": "NULL"})], ""),
    # vLLM reads 5.0 as the int 5; leaf as Python's json (5.0, equal to 5 here): see test_parse_peer_classes.
    ("vllm", "number_with_a_fraction", xml("test_types", num_param="5.0", float_param="2.50"), False,
     [("test_types", {"num_param": 5.0, "float_param": 2.5})], ""),
    ("vllm", "int_that_is_not_an_int_stays_text", xml("test_types", int_param="3.5"), False,
     [("test_types", {"int_param": "3.5"})], ""),
    ("vllm", "bool_other_than_true_is_false", xml("test_types", bool_param="yes"), False,
     [("test_types", {"bool_param": False})], ""),
    ("vllm", "python_literal_array", xml("test_types", arr_param="[1, 'x', None]"), False,
     [("test_types", {"arr_param": [1, "x", None]})], ""),
    ("vllm", "double_encoded_object", xml("test_types", obj_param='"{\\"key\\": 1}"'), False,
     [("test_types", {"obj_param": {"key": 1}})], ""),
    ("vllm", "unknown_parameter_is_text", xml("test_types", extra="12"), False, [("test_types", {"extra": "12"})], ""),
    ("vllm", "function_tag_without_gt", "<tool_call>\n<function=get_current_weather\n<parameter=city>\nDallas\n"
     "</parameter>\n</function>\n</tool_call>", False, [], ""),
    ("issue", "unrendered_template_name", "<tool_call>\n<function={{ tool.name }}>\n<parameter=city>\nX\n"
     "</parameter>\n</function>\n</tool_call>", False, [], ""),
    ("issue", "call_inside_reasoning_is_reasoning", "Maybe " + xml("Bash", command="rm -rf build") +
     " -- no, read first.</think>\n" + xml("Bash", command="ls"), True, [("Bash", {"command": "ls"})], ""),
    # The issue's draft kept a call in never-closed reasoning; vLLM's Qwen3 reasoning parser, SGLang's Qwen3
    # detector and llama.cpp all end the reasoning at `<tool_call><function=…` instead, so leaf does too.
    ("vllm", "unclosed_reasoning_ends_at_a_call", "Let me run " + xml("Bash", command="ls"), True,
     [("Bash", {"command": "ls"})], ""),
    ("vllm", "unclosed_reasoning_mentioning_tool_call_is_reasoning", "I could use <tool_call> tags later", True,
     [], ""),
    ("issue", "reasoning_then_content_then_call", "plan</think>\nRunning it." + xml("Bash", command="ls",
                                                                                       timeout="30"), True,
     [("Bash", {"command": "ls", "timeout": 30})], "Running it."),
    ("issue", "markup_inside_a_parameter_value", xml("Write", file_path="t.py", content=FILE_WITH_MARKUP), False,
     [("Write", {"file_path": "t.py", "content": FILE_WITH_MARKUP})], ""),
    ("issue", "value_keeps_inner_newlines", xml("Write", file_path="a", content="\nx\n\n"), False,
     [("Write", {"file_path": "a", "content": "\nx\n\n"})], ""),
    ("vllm", "parameter_without_closing_tag", "<tool_call>\n<function=Bash>\n<parameter=command>\nls\n"
     "</function>\n</tool_call>", False, [("Bash", {"command": "ls"})], ""),
    ("issue", "text_after_calls_is_content", DALLAS + "\nDone.", False,
     [("get_current_weather", DALLAS_ARGS)], "Done."),
    ("sglang", "plain_text_only", "This is plain text without any tool calls.", False, [],
     "This is plain text without any tool calls."),
    ("sglang", "single_tool_call", sg("sg_weather", location="Boston", unit="celsius", days="3"), False,
     [("sg_weather", {"location": "Boston", "unit": "celsius", "days": 3})], ""),
    ("sglang", "single_tool_call_with_text_prefix", "Let me check the weather for you.\n\n" +
     sg("sg_weather", location="New York"), False, [("sg_weather", {"location": "New York"})],
     "Let me check the weather for you."),
    ("sglang", "multiple_tool_calls", sg("sg_weather", location="New York") + "\n" +
     sg("sql_interpreter", query="SELECT * FROM users", dry_run="True"), False,
     [("sg_weather", {"location": "New York"}), ("sql_interpreter", {"query": "SELECT * FROM users", "dry_run": True})],
     ""),
    ("sglang", "integer_parameter_conversion", sg("sg_weather", location="Tokyo", days="5"), False,
     [("sg_weather", {"location": "Tokyo", "days": 5})], ""),
    ("sglang", "boolean_parameter_conversion", sg("sql_interpreter", query="SELECT 1", dry_run="True"), False,
     [("sql_interpreter", {"query": "SELECT 1", "dry_run": True})], ""),
    ("sglang", "complex_array_parameter", sg("TodoWrite", todos='\n[\n  {"content": "Buy groceries", "status": '
     '"pending"},\n  {"content": "Finish report", "status": "completed"}\n]\n'), False,
     [("TodoWrite", {"todos": [{"content": "Buy groceries", "status": "pending"},
                               {"content": "Finish report", "status": "completed"}]})], ""),
    ("sglang", "empty_parameter_value", sg("sg_weather", location=""), False, [("sg_weather", {"location": ""})], ""),
    ("sglang", "parameter_with_special_characters", sg("sql_interpreter", query="SELECT * FROM users WHERE name = "
     "'John \"Doe\"'"), False, [("sql_interpreter", {"query": "SELECT * FROM users WHERE name = 'John \"Doe\"'"})], ""),
    ("sglang", "incomplete_tool_call_does_not_crash", "<tool_call>\n<function=sg_weather>\n<parameter=location>London",
     False, [("sg_weather", {"location": "London"})], ""),
    ("leaf", "code_block_with_arguments_is_plain_text",
     'Call it like this:\n```python\nclient.call({"name": "f", "arguments": x})\n```', False, [],
     'Call it like this:\n```python\nclient.call({"name": "f", "arguments": x})\n```'),
]


@pytest.mark.parametrize(("source", "case", "text", "thinking", "calls", "content"), CASES, ids=[c[1] for c in CASES])
def test_parses_as_the_peers(source: str, case: str, text: str, thinking: bool,
                             calls: list[tuple[str, dict[str, Any]]], content: str) -> None:
    reply = parse_reply(text, TOOLS, in_reasoning=thinking)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == calls
    assert reply.content == content


def test_plain_text_with_arguments_is_not_a_format_error() -> None:
    reply = parse_reply(next(c[2] for c in CASES if c[1] == "code_block_with_arguments_is_plain_text"), TOOLS)
    assert reply.parse_error is None and reply.tool_calls == []


def test_broken_markup_is_a_format_error() -> None:
    assert parse_reply(next(c[2] for c in CASES if c[1] == "function_tag_without_gt"), TOOLS).parse_error is not None
    assert parse_reply("<tool_call>\n</tool_call>", TOOLS).parse_error is not None


# --- llama.cpp: `tests/test-chat.cpp` (vendored in llama-cpp-python 0.3.36), its "Qwen3.5-4B.jinja" block
# (reasoning format auto; `thinking` = its enable_thinking, on by default there) and its "Qwen3-Coder.jinja"
# block (no reasoning). Not ported: reasoning-format "none" (leaf always splits), continuation of a
# prefilled message, the tool_choice=required and earlier-history variants (inputs repeated verbatim;
# leaf's parse does not depend on them). llama.cpp keeps the newline before a call in `content`; leaf
# strips content, so expected contents below are llama.cpp's, stripped.
def fn(tool: str, /, **props: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool, "parameters": {"type": "object", "properties": props}}}


INT, STR = {"type": "integer"}, {"type": "string"}
LC_TOOLS = [fn("special_function", arg1=INT), fn("special_function_with_opt", arg1=INT, arg2=INT),
            fn("python", code=STR), fn("edit", filename=STR, oldString=STR, newString=STR),
            fn("run_in_terminal", command=STR), fn("empty_args"), fn("html", markup=STR),
            fn("todo_list", todos={"type": "array"}),
            fn("tool_2req_4opt", req1=STR, req2=INT, opt1=STR, opt2=INT, opt3=STR, opt4=INT),
            fn("tool_2req_5opt", req1=STR, req2=INT, opt1=STR, opt2=INT, opt3=STR, opt4=INT, opt5=STR),
            fn("set_nullable_str", name={"type": ["string", "null"]}),
            fn("set_nullable_str_nf", name={"type": ["null", "string"]}),
            fn("set_nullable_int", count={"type": ["integer", "null"]}),
            fn("set_union", value={"type": ["string", "object"]}, amount={"type": ["string", "integer"]}),
            fn("set_unit", unit={"enum": ["celsius", "fahrenheit"]})]


def lc(name: str, *params: tuple[str, str], wrapped: bool = True) -> str:
    """The Qwen3.5 template's call layout: each value between newlines."""
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params)
    call = f"<function={name}>\n{body}</function>\n</tool_call>"
    return f"<tool_call>\n{call}" if wrapped else call


SPECIAL = lc("special_function", ("arg1", "1"))
OPT = lc("special_function_with_opt", ("arg1", "1"), ("arg2", "2"))
PWD = lc("run_in_terminal", ("command", "pwd"))
HELLO_CODE = 'def hello():\n    print("Hello, world!")\n\nhello()'
EDIT = (("filename", "foo.c"), ("oldString", "#iclunde"), ("newString", "#include"))
EDIT_ARGS = {"filename": "foo.c", "oldString": "#iclunde", "newString": "#include"}
HTML = "<html>\n <head>\n  <title>Hello!</title>\n </head>\n</html>"
TODOS = '[{"item": "Check stuff", "selected": false}, {"item": "Prepare stuff", "selected": true}]'
INVOICE = '{"amount": 123.45, "date": "2025-12-03"}'

# (case, text, thinking, expected reasoning, expected calls, expected content)
LLAMA_CASES: list[tuple[str, str, bool, str | None, list[tuple[str, dict[str, Any]]], str]] = [
    ("q35_thoughts_then_answer", "I'm\nthinking\n</think>\n\nHello, world!\nWhat's up?", True, "I'm\nthinking", [],
     "Hello, world!\nWhat's up?"),
    ("q35_call_no_thinking", SPECIAL, False, None, [("special_function", {"arg1": 1})], ""),
    ("q35_thoughts_then_call", "I'm\nthinking\n</think>\n\n" + SPECIAL, True, "I'm\nthinking",
     [("special_function", {"arg1": 1})], ""),
    ("q35_parallel_calls", SPECIAL + "\n" + OPT, False, None,
     [("special_function", {"arg1": 1}), ("special_function_with_opt", {"arg1": 1, "arg2": 2})], ""),
    ("q35_multiline_code", lc("python", ("code", HELLO_CODE)), False, None, [("python", {"code": HELLO_CODE})], ""),
    ("q35_edit_strings", lc("edit", *EDIT), False, None, [("edit", EDIT_ARGS)], ""),
    ("q35_value_ending_in_newline", lc("edit", *EDIT[:2], ("newString", "#include\n")), False, None,
     [("edit", {**EDIT_ARGS, "newString": "#include\n"})], ""),
    ("q35_code_starting_with_indent", lc("python", ("code", '    print("Hello, world!")')), False, None,
     [("python", {"code": '    print("Hello, world!")'})], ""),
    ("q35_json_answer_after_thoughts", "I need to output the invoice details in JSON\n</think>\n\n" + INVOICE, True,
     "I need to output the invoice details in JSON", [], INVOICE),
    ("q35_call_ends_prefilled_thinking", PWD, True, "", [("run_in_terminal", {"command": "pwd"})], ""),
    ("q35_thoughts_then_call_without_close", "Need to inspect the current directory.\n" + PWD, True,
     "Need to inspect the current directory.", [("run_in_terminal", {"command": "pwd"})], ""),
    ("q35_empty_args", "<tool_call>\n<function=empty_args>\n</function>\n</tool_call>", False, None,
     [("empty_args", {})], ""),
    ("q35_empty_args_no_properties", "<tool_call>\n<function=empty_args_no_props>\n</function>\n</tool_call>", False,
     None, [("empty_args_no_props", {})], ""),
    ("q35_empty_think_block_then_call", "</think>\n\n" + SPECIAL, True, "", [("special_function", {"arg1": 1})], ""),
    ("q35_empty_think_then_terminal_call", "</think>\n\n" + PWD, True, "", [("run_in_terminal", {"command": "pwd"})],
     ""),
    ("q35_empty_think_content_then_call", "</think>\n\nLet me inspect the current directory.\n" + PWD, True, "",
     [("run_in_terminal", {"command": "pwd"})], "Let me inspect the current directory."),
    ("q35_thoughts_content_call", "I should inspect the directory.\n</think>\n\nLet me inspect it now.\n" + PWD,
     True, "I should inspect the directory.", [("run_in_terminal", {"command": "pwd"})], "Let me inspect it now."),
    ("coder_plain_text", "Hello, world!\nWhat's up?", False, None, [], "Hello, world!\nWhat's up?"),
    ("coder_single_call", SPECIAL, False, None, [("special_function", {"arg1": 1})], ""),
    ("coder_without_opening_tool_call", lc("special_function", ("arg1", "1"), wrapped=False), False, None,
     [("special_function", {"arg1": 1})], ""),
    ("coder_text_then_call_without_opening", "Let me call it.\n" + lc("special_function", ("arg1", "1"),
                                                                      wrapped=False), False, None,
     [("special_function", {"arg1": 1})], "Let me call it."),
    ("coder_first_call_without_opening", lc("special_function", ("arg1", "1"), wrapped=False) + "\n" + OPT, False,
     None, [("special_function", {"arg1": 1}), ("special_function_with_opt", {"arg1": 1, "arg2": 2})], ""),
    ("coder_parallel_calls", SPECIAL + "\n" + OPT, False, None,
     [("special_function", {"arg1": 1}), ("special_function_with_opt", {"arg1": 1, "arg2": 2})], ""),
    ("coder_multiline_code", lc("python", ("code", HELLO_CODE)), False, None, [("python", {"code": HELLO_CODE})], ""),
    ("coder_cjk_code", lc("python", ("code", "格")), False, None, [("python", {"code": "格"})], ""),
    ("coder_html_value", lc("html", ("markup", HTML)), False, None, [("html", {"markup": HTML})], ""),
    ("coder_array_of_objects", lc("todo_list", ("todos", TODOS)), False, None,
     [("todo_list", {"todos": [{"item": "Check stuff", "selected": False},
                               {"item": "Prepare stuff", "selected": True}]})], ""),
    ("coder_required_args_any_order", lc("edit", EDIT[2], EDIT[0], EDIT[1]), False, None, [("edit", EDIT_ARGS)], ""),
    ("coder_2req_4opt_out_of_order", lc("tool_2req_4opt", ("req2", "42"), ("req1", "hello"), ("opt2", "200")), False,
     None, [("tool_2req_4opt", {"req2": 42, "req1": "hello", "opt2": 200})], ""),
    ("coder_2req_4opt_reversed_optionals", lc("tool_2req_4opt", ("req1", "hello"), ("req2", "42"), ("opt4", "100"),
                                              ("opt2", "200")), False, None,
     [("tool_2req_4opt", {"req1": "hello", "req2": 42, "opt4": 100, "opt2": 200})], ""),
    ("coder_2req_5opt_reversed", lc("tool_2req_5opt", ("req1", "world"), ("req2", "7"), ("opt5", "last"),
                                    ("opt3", "middle"), ("opt1", "first")), False, None,
     [("tool_2req_5opt", {"req1": "world", "req2": 7, "opt5": "last", "opt3": "middle", "opt1": "first"})], ""),
    ("coder_2req_5opt_shuffled", lc("tool_2req_5opt", ("req1", "test"), ("req2", "99"), ("opt3", "c"), ("opt1", "a"),
                                    ("opt5", "e"), ("opt4", "4"), ("opt2", "2")), False, None,
     [("tool_2req_5opt", {"req1": "test", "req2": 99, "opt3": "c", "opt1": "a", "opt5": "e", "opt4": 4, "opt2": 2})],
     ""),
    ("coder_nullable_string", lc("set_nullable_str", ("name", "hello world")), False, None,
     [("set_nullable_str", {"name": "hello world"})], ""),
    ("coder_nullable_string_null_first", lc("set_nullable_str_nf", ("name", "hello world")), False, None,
     [("set_nullable_str_nf", {"name": "hello world"})], ""),
    ("coder_nullable_integer", lc("set_nullable_int", ("count", "42")), False, None,
     [("set_nullable_int", {"count": 42})], ""),
    ("coder_nullable_string_given_null", lc("set_nullable_str", ("name", "null")), False, None,
     [("set_nullable_str", {"name": None})], ""),
    ("coder_union_object_and_text", lc("set_union", ("value", '{"a": 1}'), ("amount", "2 dollars")), False, None,
     [("set_union", {"value": {"a": 1}, "amount": "2 dollars"})], ""),
    ("coder_union_bad_json_and_int", lc("set_union", ("value", "{not valid json"), ("amount", "42")), False, None,
     [("set_union", {"value": "{not valid json", "amount": 42})], ""),
    ("coder_enum_without_type", lc("set_unit", ("unit", "celsius")), False, None, [("set_unit", {"unit": "celsius"})],
     ""),
]


@pytest.mark.parametrize(("case", "text", "thinking", "reasoning", "calls", "content"), LLAMA_CASES,
                         ids=[c[0] for c in LLAMA_CASES])
def test_parses_as_llama_cpp(case: str, text: str, thinking: bool, reasoning: str | None,
                             calls: list[tuple[str, dict[str, Any]]], content: str) -> None:
    reply = parse_reply(text, LC_TOOLS, in_reasoning=thinking)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == calls
    assert reply.content == content
    assert reply.reasoning == reasoning


def test_a_second_think_tag_is_where_leaf_differs_from_llama_cpp() -> None:
    """llama.cpp's "reasoning traces not sent" case: the prompt opened `<think>` and the model writes another
    `<think>\n\n</think>`. llama.cpp keeps the second tag as reasoning text (`<think>`); leaf, like vLLM's Qwen3
    parser (which strips a generated `<think>`), reads it as the opening tag, so the reasoning is empty. The
    call agrees."""
    reply = parse_reply("<think>\n\n</think>\n\n" + SPECIAL, LC_TOOLS, in_reasoning=True)
    assert reply.reasoning == ""
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("special_function", {"arg1": 1})]
