"""The reply parser's held-out classes (issue 21), each case transcribed from a peer's own published test.

Sources, cited per case as `file::test`:
- vLLM `tests/tool_parsers/test_qwen3_xml_coder_shared.py` ("vllm-shared") and
  `tests/tool_parsers/test_qwen3coder_tool_parser.py` ("vllm-coder"): the cases both Qwen3 XML parsers share.
- SGLang `test/registered/unit/function_call/test_qwen3_coder_numeric_precision.py` ("sglang-numeric"),
  `test/registered/function_call/test_nonfinite_coercion.py` ("sglang-nonfinite") and
  `test/registered/unit/function_call/test_qwen3_coder_detector.py` ("sglang-detector").
- llama.cpp `tests/test-chat.cpp`, its Qwen3-Coder block (as vendored in llama-cpp-python 0.3.36).
The inputs are theirs; the expected values are their assertions. Where leaf differs on purpose, or the peers
disagree (then leaf follows vLLM, the server FrogNano's eval configs use), the case's comment says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leaf_cli.llm.messages import ToolCall
from leaf_cli.llm.parse import parse_reply
from leaf_cli.tools import Workspace, run_tool_call, tool_schemas


def fn(tool: str, /, **props: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool, "parameters": {"type": "object", "properties": props}}}


def sg_lookup(raw: str) -> str:
    """sglang-numeric's layout: no newlines anywhere."""
    return f"<tool_call><function=lookup><parameter=value>{raw}</parameter></function></tool_call>"


def only_args(text: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    reply = parse_reply(text, tools)
    assert len(reply.tool_calls) == 1, (reply.tool_calls, reply.parse_error)
    return reply.tool_calls[0].arguments


def same(value: Any, expected: Any) -> bool:
    """Equal and of the same type all the way down (1250 is not 1250.0, True is not 1)."""
    if type(value) is not type(expected):
        return False
    if isinstance(expected, dict):
        return value.keys() == expected.keys() and all(same(value[k], expected[k]) for k in expected)
    if isinstance(expected, list):
        return len(value) == len(expected) and all(same(a, b) for a, b in zip(value, expected))
    return value == expected


NUMBER, INTEGER, STRING = {"type": "number"}, {"type": "integer"}, {"type": "string"}
NULLABLE_NUMBER = {"anyOf": [{"type": "number"}, {"type": "null"}]}

# --- Numbers exactly as written ------------------------------------------------------------------------------
# (id, schema, raw, expected). vLLM's qwen3_coder reads a `number` through float() (so 9007199254740993 comes
# back as ...992 and 1.25e3 as the int 1250): there leaf follows SGLang's newer rule on purpose, because
# rounding silently changes a value the model wrote (an id, a byte offset) and the tool cannot know.
NUMBER_CASES: list[tuple[str, dict[str, Any], str, Any]] = [
    # sglang-numeric::test_number_schema_preserves_large_integer_literals
    ("number_2_53_plus_1", NUMBER, "9007199254740993", 9007199254740993),
    ("number_minus_2_53_minus_1", NUMBER, "-9007199254740993", -9007199254740993),
    ("number_u64_max", NUMBER, "18446744073709551615", 18446744073709551615),
    ("number_19_digits", NUMBER, "1790892345000000001", 1790892345000000001),
    ("number_padded_with_spaces", NUMBER, " 9007199254740993 ", 9007199254740993),
    # sglang-numeric::test_nullable_number_schema_preserves_large_integer_literals
    ("nullable_number_large", NULLABLE_NUMBER, "9007199254740993", 9007199254740993),
    # sglang-numeric::test_other_numeric_forms_are_unchanged
    ("number_small_int", NUMBER, "42", 42),
    ("number_negative_fraction", NUMBER, "-12.5", -12.5),
    ("number_exponent_is_float", NUMBER, "1.25e3", 1250.0),
    ("number_not_a_number_stays_text", NUMBER, "not-a-number", "not-a-number"),
    ("number_null_is_null", NUMBER, "null", None),
    # sglang-numeric::test_integer_and_string_schemas_are_unchanged
    ("integer_large", INTEGER, "9007199254740993", 9007199254740993),
    ("string_large_stays_text", STRING, "9007199254740993", "9007199254740993"),
    # sglang-nonfinite::test_non_finite_degrades_to_string (ported there from vLLM #43984): never Infinity/NaN,
    # which are not JSON
    *[(f"number_nonfinite_{raw}", NUMBER, raw, raw) for raw in ("inf", "-inf", "Infinity", "1e999", "-1e999", "nan", "NaN")],
    *[(f"array_nonfinite_{i}", {"type": "array"}, raw, raw)
      for i, raw in enumerate(("[1e999]", "[1, 2, 1e999]", "[Infinity]", "[NaN]", "(1e999,)"))],
    # sglang-nonfinite::test_finite_values_still_coerced
    ("number_finite_int", NUMBER, "42", 42),
    ("number_finite_fraction", NUMBER, "3.14", 3.14),
    ("array_finite", {"type": "array"}, "[1, 2, 3]", [1, 2, 3]),
    ("object_finite", {"type": "object"}, '{"a": 1}', {"a": 1}),
]


@pytest.mark.parametrize(("schema", "raw", "expected"), [c[1:] for c in NUMBER_CASES], ids=[c[0] for c in NUMBER_CASES])
def test_numbers_exactly_as_written(schema: dict[str, Any], raw: str, expected: Any) -> None:
    args = only_args(sg_lookup(raw), [fn("lookup", value=schema)])
    assert same(args, {"value": expected}), args


# --- Strings versus null ---------------------------------------------------------------------------------------
OPTIONAL_STR = {"anyOf": [{"type": "string"}, {"type": "null"}]}
OPTIONAL_INT = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
ANYOF_TOOL = fn("test_anyof", anyof_int={"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
                anyof_str=OPTIONAL_STR, anyof_array={"anyOf": [{"type": "array", "items": {"type": "string"}},
                                                               {"type": "null"}]},
                anyof_obj={"anyOf": [{"type": "object"}, {"type": "null"}]}, type_as_array={"type": ["integer", "null"]},
                multi_non_null={"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]})


def one_param(tool: str, key: str, raw: str) -> str:
    """vllm-shared's layout for one parameter: the value right after the tag, no newlines."""
    return f"<tool_call>\n<function={tool}>\n<parameter={key}>{raw}</parameter>\n</function>\n</tool_call>"


NULL_CASES: list[tuple[str, dict[str, Any], str, Any]] = [
    # vllm-shared::test_string_null_value_preserved
    ("string_null_is_the_text_null", STRING, "null", "null"),
    # vllm-shared::test_anyof_string_null_keeps_value_as_string
    ("optional_string_keeps_digits_as_text", OPTIONAL_STR, "42", "42"),
    # vllm-shared::test_anyof_integer_null_parses_as_int
    ("optional_integer_is_an_int", OPTIONAL_INT, "42", 42),
    # vllm-shared::test_python_none_value_for_nullable_int
    ("optional_integer_python_none_is_null", OPTIONAL_INT, "None", None),
    # vllm-shared::test_anyof_string_null_with_null_literal_returns_none
    ("optional_string_null_is_null", OPTIONAL_STR, "null", None),
    ("optional_string_python_none_is_null", OPTIONAL_STR, "None", None),
    # llama.cpp test-chat.cpp Qwen3-Coder "nullable string given null - parses as JSON null"
    ("type_list_string_null_given_null", {"type": ["string", "null"]}, "null", None),
]


@pytest.mark.parametrize(("schema", "raw", "expected"), [c[1:] for c in NULL_CASES], ids=[c[0] for c in NULL_CASES])
def test_strings_versus_null(schema: dict[str, Any], raw: str, expected: Any) -> None:
    args = only_args(one_param("f", "p", raw), [fn("f", p=schema)])
    assert same(args, {"p": expected}), args


def test_anyof_schemas_take_their_first_non_null_type() -> None:
    """vllm-coder::test_extract_tool_calls_anyof_type_conversion (pydantic v2's Optional[T] schemas)."""
    text = ("<tool_call>\n<function=test_anyof>\n<parameter=anyof_int>\n5\n</parameter>\n<parameter=anyof_str>\nhello\n"
            "</parameter>\n<parameter=anyof_array>\n[\"a\", \"b\", \"c\"]\n</parameter>\n<parameter=anyof_obj>\n"
            "{\"key\": \"value\"}\n</parameter>\n<parameter=type_as_array>\n42\n</parameter>\n<parameter=multi_non_null>\n"
            "some text\n</parameter>\n</function>\n</tool_call>")
    assert same(only_args(text, [ANYOF_TOOL]), {"anyof_int": 5, "anyof_str": "hello", "anyof_array": ["a", "b", "c"],
                                                "anyof_obj": {"key": "value"}, "type_as_array": 42,
                                                "multi_non_null": "some text"})


# --- Double-encoded objects ------------------------------------------------------------------------------------
PROCESS = fn("process", name=STRING, data={"type": "object"})
TYPES = fn("test_types", int_param=INTEGER, float_param={"type": "float"}, bool_param={"type": "boolean"},
           str_param=STRING, obj_param={"type": "object"})


def test_object_written_as_a_json_string_of_a_python_repr() -> None:
    """vllm-shared::test_double_encoded_object_param_nonstreaming (a template that did json.dumps(str(dict)))."""
    text = ("<tool_call>\n<function=process>\n<parameter=name>\nhello\n</parameter>\n"
            "<parameter=data>\n\"{'key': 'value', 'n': 1}\"\n</parameter>\n</function>\n</tool_call>\n")
    assert same(only_args(text, [PROCESS]), {"name": "hello", "data": {"key": "value", "n": 1}})


def test_object_written_as_a_python_repr() -> None:
    """vllm-shared::test_extract_tool_calls_complex_type_with_single_quote."""
    text = "<tool_call>\n<function=test_types>\n<parameter=obj_param>\n{'key': 'value'}\n</parameter>\n</function>\n</tool_call>"
    assert same(only_args(text, [TYPES]), {"obj_param": {"key": "value"}})


def test_optional_object_is_not_double_encoded() -> None:
    """vllm-shared::test_anyof_object_param_not_double_encoded_nonstreaming."""
    tool = fn("update_record", data={"anyOf": [{"type": "object"}, {"type": "null"}]})
    text = one_param("update_record", "data", '{"key": "value", "count": 42}')
    assert same(only_args(text, [tool]), {"data": {"key": "value", "count": 42}})


def test_array_with_json_literals() -> None:
    """vllm-shared::test_array_with_json_bool."""
    text = "<tool_call>\n<function=pick>\n<parameter=items>\n[\"a\", \"b\", 1, true]\n</parameter>\n</function>\n</tool_call>"
    assert same(only_args(text, [fn("pick", items={"type": "array"})]), {"items": ["a", "b", 1, True]})


@pytest.mark.parametrize("raw", ["not an object", "{'x': 1e999}", '{"x": 1e999}', "[1, 2]", '"just text"'])
def test_an_object_that_does_not_decode_to_one_is_a_format_error(raw: str) -> None:
    """Deliberately unlike every peer (vLLM and SGLang pass the text on; sglang-nonfinite keeps `{'x': 1e999}`
    as text): a tool whose schema wants an object never gets a string. The call is dropped with a parse error
    that names the tool and the parameter, which the loop answers as a format error."""
    reply = parse_reply(one_param("process", "data", raw), [PROCESS])
    assert reply.tool_calls == []
    assert reply.parse_error is not None and "'data'" in reply.parse_error and "process" in reply.parse_error
    assert "object" in reply.parse_error


def test_a_hermes_call_with_an_object_as_text_is_decoded_or_refused() -> None:
    """The JSON fallback keeps the same promise: a JSON string of an object is decoded, anything else refused."""
    good = '<tool_call>\n{"name": "process", "arguments": {"data": "{\\"k\\": 1}"}}\n</tool_call>'
    assert same(only_args(good, [PROCESS]), {"data": {"k": 1}})
    bad = parse_reply('<tool_call>\n{"name": "process", "arguments": {"data": "k=1"}}\n</tool_call>', [PROCESS])
    assert bad.tool_calls == [] and bad.parse_error is not None and "'data'" in bad.parse_error


# --- Markup inside a value is content ---------------------------------------------------------------------------
WRITE_FILE = fn("write_file", path=STRING, content=STRING)
XML_TAGS_IN_CONTENT = ('char_deltas = [\n    "<tool_call>\\n",\n    "<parameter=query>\\n",\n    "\\n</parameter>\\n",\n'
                       '    "</function>\\n",\n]\n')
PARAM_LIKE_LINES = 'TOOL_CALL_TEMPLATE = """\n</parameter>\n<parameter=new_string>\n#!/usr/bin/env python3\n</parameter>\n"""\n'
REAL_NAME_LITERAL = 'doc = """\n<parameter=path>\nliteral/value\n</parameter>\n"""\n'
FULL_NESTED_CALL = ('doc = """\n<tool_call>\n<function=write_file>\n<parameter=path>\nliteral/value.txt\n</parameter>\n'
                    '<parameter=content>\nhello\n</parameter>\n</function>\n</tool_call>\n"""\n')


def write_file(path: str, content: str) -> str:
    """vllm-shared's layout: the content ends in its own newline, then `</parameter>` (so one is stripped)."""
    return (f"<tool_call>\n<function=write_file>\n<parameter=path>\n{path}\n</parameter>\n"
            f"<parameter=content>\n{content}</parameter>\n</function>\n</tool_call>")


MARKUP_CASES = [
    # vllm-shared::test_content_with_xml_structural_tags_nonstreaming
    ("xml_structural_tags", "test.py", XML_TAGS_IN_CONTENT),
    # vllm-shared::test_content_with_param_like_lines_nonstreaming (`new_string` is not write_file's)
    ("param_like_lines", "test_template.py", PARAM_LIKE_LINES),
    # vllm-shared::test_content_with_real_param_name_literal_nonstreaming (`path` is write_file's own)
    ("real_param_name_literal", "fixture.py", REAL_NAME_LITERAL),
    # vllm-shared::test_content_with_full_nested_tool_call_nonstreaming
    ("full_nested_tool_call", "fixture.py", FULL_NESTED_CALL),
]


@pytest.mark.parametrize(("path", "content"), [c[1:] for c in MARKUP_CASES], ids=[c[0] for c in MARKUP_CASES])
def test_markup_inside_a_value_is_content(path: str, content: str) -> None:
    reply = parse_reply(write_file(path, content), [WRITE_FILE])
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("write_file", {"path": path,
                                                                                 "content": content.rstrip("\n")})]
    assert list(reply.tool_calls[0].arguments) == ["path", "content"]


def test_a_nested_literal_with_names_outside_the_schema() -> None:
    """vllm-shared::test_two_tools_second_with_out_of_schema_nested_literal_nonstreaming."""
    nested = 'template = """\n<tool_call>\n<function=foo>\n<parameter=bar>baz</parameter>\n</function>\n</tool_call>\n"""\n'
    text = ("<tool_call>\n<function=foo>\n<parameter=bar>baz</parameter>\n</function>\n</tool_call>\n\n"
            + write_file("fixture.py", nested))
    reply = parse_reply(text, [WRITE_FILE])
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("foo", {"bar": "baz"}), ("write_file", {"path": "fixture.py", "content": nested.rstrip("\n")})]


def test_an_unrendered_template_call_is_not_a_call() -> None:
    """vllm-shared::test_jinja_template_phantom_tool_call_is_rejected_nonstreaming."""
    text = ("<tool_call>\n<function={{ tc.name }}>\n<parameter={{ k }}>\n{{ v }}\n</parameter>\n</function>\n</tool_call>"
            "\n\n<tool_call>\n<function=write_file>\n<parameter=path>\nout.txt\n</parameter>\n<parameter=content>\nhello\n"
            "</parameter>\n</function>\n</tool_call>")
    assert [c.name for c in parse_reply(text, [WRITE_FILE]).tool_calls] == ["write_file"]


def test_narrative_around_an_inline_empty_tool_call_is_kept() -> None:
    """vllm-shared::test_inline_empty_tool_call_preserves_content_before_real_call."""
    text = ("I'll show: <tool_call>example</tool_call>. Now real:\n<tool_call>\n<function=log>\n<parameter=msg>\nhi\n"
            "</parameter>\n</function>\n</tool_call>")
    reply = parse_reply(text, [fn("log", msg=STRING)])
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("log", {"msg": "hi"})]
    assert "I'll show:" in reply.content and "Now real:" in reply.content


@pytest.mark.parametrize("value", ["a <b>tag</b> city", "<config>\n  <p>1</p>\n</parameters>", "x </parameterList>"])
def test_angle_brackets_and_marker_lookalikes_are_kept(value: str) -> None:
    """sglang-detector::test_angle_brackets_inside_value_are_kept and ::test_closed_value_ending_like_a_marker_is_kept."""
    assert same(only_args(sg_weather(f"{value}\n</parameter>"), [SG_WEATHER]), {"city": value, "days": 3})


# The same rule with leaf's own tools: Write and Edit whose text is this project's parser tests.
OWN_FIXTURE = Path(__file__).with_name("test_parse_peers.py").read_text(encoding="utf-8")


def xml_call(name: str, **params: str) -> str:
    """The Qwen3.5 template's layout for a call: each value between newlines."""
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


@pytest.mark.parametrize("thinking", [True, False])
def test_writing_this_projects_parser_tests_writes_them_whole(tmp_path: Path, thinking: bool) -> None:
    """The issue's case end to end: the model writes a file full of `<tool_call>`, `<parameter=…>`,
    `</parameter>` and `</think>` text (tests/llm/test_parse_peers.py itself), then edits a line of markup in
    it; what lands on disk is exactly what it wrote. Before the schema-aware rule the Write was cut at the
    first literal `</parameter>` and the file on disk was wrong. Without thinking, the `</think>` inside the
    value is not the end of a reasoning block either."""
    assert "</parameter>\\n" in OWN_FIXTURE and "<parameter={k}>" in OWN_FIXTURE and "</think>" in OWN_FIXTURE
    workspace = Workspace(tmp_path)
    schemas = tool_schemas()
    head = "I will copy it.\n</think>\n\nWriting it.\n" if thinking else "Writing it.\n"
    write = parse_reply(head + xml_call("Write", file_path="copy.py", content=OWN_FIXTURE), schemas, in_reasoning=thinking)
    assert write.content == "Writing it." and write.reasoning == ("I will copy it." if thinking else None)
    assert [(c.name, c.arguments) for c in write.tool_calls] == [("Write", {"file_path": "copy.py",
                                                                            "content": OWN_FIXTURE})]
    assert run_tool_call(write.tool_calls[0], workspace).text == f"Wrote copy.py ({len(OWN_FIXTURE)} bytes)."
    old = '    body = "".join(f"<parameter={k}>{v}</parameter>\\n" for k, v in params.items())'
    new = old + "  # <parameter=file_path>\n</parameter>\n<tool_call>"
    assert old in OWN_FIXTURE
    edit = parse_reply(xml_call("Edit", file_path="copy.py", old_string=old, new_string=new), schemas)
    assert [c.arguments for c in edit.tool_calls] == [{"file_path": "copy.py", "old_string": old, "new_string": new}]
    assert run_tool_call(edit.tool_calls[0], workspace).text == "Edited copy.py (1 replacement)."
    assert (tmp_path / "copy.py").read_text(encoding="utf-8") == OWN_FIXTURE.replace(old, new, 1)


# --- A missing </parameter> ------------------------------------------------------------------------------------
WEATHER = fn("get_current_weather", city=STRING, state=STRING, unit={"type": "string", "enum": ["fahrenheit", "celsius"]})
SG_WEATHER = fn("get_weather", city=STRING, days=INTEGER)


def sg_weather(city_block: str) -> str:
    """sglang-detector's `_call`: the city value as given, then a well-formed `days`."""
    return (f"<tool_call>\n<function=get_weather>\n<parameter=city>\n{city_block}\n<parameter=days>\n3\n</parameter>\n"
            "</function>\n</tool_call>")


def test_a_missing_close_ends_at_the_next_parameter_of_the_schema() -> None:
    """vllm-shared::test_extract_tool_calls_missing_closing_parameter_tag (and vllm-coder's of the same name)."""
    text = ("Let me check the weather for you:\n<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n"
            "<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>")
    reply = parse_reply(text, [WEATHER])
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})]
    assert "Let me check the weather for you:" in reply.content


def test_a_well_formed_value_before_the_next_parameter() -> None:
    """sglang-detector::test_well_formed_value_unchanged."""
    assert same(only_args(sg_weather("Shanghai\n</parameter>"), [SG_WEATHER]), {"city": "Shanghai", "days": 3})


@pytest.mark.parametrize("marker", ["</parameter1>", "</parameter_function>", "</parameter"])
def test_a_drifted_close_marker_is_where_the_peers_disagree(marker: str) -> None:
    """sglang-detector::test_non_streaming_strips_drifted_end_marker strips a drifted `</parameter1>` from the
    value; vLLM's qwen3_coder keeps it (the value ends at the next `<parameter=days>`, the text before it is
    the value). The peers disagree, so leaf follows vLLM: the value keeps the text, `days` is still read."""
    assert same(only_args(sg_weather(f"Shanghai\n{marker}"), [SG_WEATHER]), {"city": f"Shanghai\n{marker}", "days": 3})


def test_the_harness_path_alias_is_a_name_of_a_file_tool() -> None:
    """Leaf's one addition to vLLM's schema-aware rule: FrogNano's harness read `path` for `file_path`, so a
    model trained there writes `<parameter=path>`; for Write it ends the value before it like a schema name
    (vLLM, not knowing the alias, would keep it and the path inside `content`)."""
    text = xml_call("Write", content="print(1)", path="a.py")
    assert only_args(text, tool_schemas()) == {"content": "print(1)", "path": "a.py"}


def test_a_value_with_many_literal_closes_is_read_in_one_pass() -> None:
    """sglang-detector::test_long_whitespace_run_in_unclosed_value_parses_in_linear_time, for leaf's walk:
    thousands of literal `</parameter>` lines in one value (none structural) still give the whole value.
    (No timing here: bench/ measures speed.)"""
    content = "\n".join(f"line {i}\n</parameter>\n" for i in range(3000))
    assert only_args(xml_call("Write", file_path="big.txt", content=content), tool_schemas()) == {
        "file_path": "big.txt", "content": content}


def test_a_malformed_call_is_dropped_and_the_next_one_kept() -> None:
    """vllm-shared::test_none_tool_calls_filtered: a `<function=` without its `>` gives no call (and leaf's
    parse error), the well-formed call after it is read, values in the no-newline layout."""
    text = ("<tool_call>\n<function=bad_func_no_gt\n</function>\n</tool_call>\n<tool_call>\n<function=get_current_weather>\n"
            "<parameter=city>Dallas</parameter>\n<parameter=state>TX</parameter>\n</function>\n</tool_call>")
    reply = parse_reply(text, [WEATHER])
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("get_current_weather", {"city": "Dallas", "state": "TX"})]
    assert reply.parse_error is not None


def test_the_json_fallback_keeps_numbers_exact() -> None:
    """The numbers class through the Hermes JSON fallback, strict and repaired (single quotes, trailing comma):
    Python's json keeps an integer's every digit, and the repair must not lose them either."""
    for text in ('<tool_call>\n{"name": "lookup", "arguments": {"value": 18446744073709551615}}\n</tool_call>',
                 "<tool_call>\n{'name': 'lookup', 'arguments': {'value': 18446744073709551615,}}\n</tool_call>",
                 '```json\n{"name": "lookup", "arguments": {"value": 18446744073709551615}}\n```'):
        assert same(only_args(text, [fn("lookup", value=NUMBER)]), {"value": 18446744073709551615})
