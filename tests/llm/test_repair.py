"""loads_lenient repairs small-model JSON; coerce_value types XML parameter values by schema."""

from __future__ import annotations

import pytest

from leaf_cli.llm.repair import coerce_value, loads_lenient


@pytest.mark.parametrize("text, value", [
    ('{"a": 1}', {"a": 1}),
    ("{'a': 'it\\'s', 'b': \"q\"}", {"a": "it's", "b": "q"}),
    ("{'a': \"say \\\"hi\\\"\"}", {"a": 'say "hi"'}),
    ('{"a": [1, 2,],}', {"a": [1, 2]}),
    ('{"a": {"b": "c', {"a": {"b": "c"}}),
    ("{'flag': True, 'none': None}", {"flag": True, "none": None}),
    ('Sure! {"a": 1} hope that helps', {"a": 1}),
    ('{"text": "line1\nline2"}', {"text": "line1\nline2"}),
])
def test_loads_lenient(text: str, value: object) -> None:
    assert loads_lenient(text) == value


def test_loads_lenient_gives_up_on_prose() -> None:
    assert loads_lenient("no json here") is None


@pytest.mark.parametrize("raw, schema, value", [
    ("5", {"type": "integer"}, 5),
    ("5.0", {"type": "integer"}, "5.0"),  # int() only, as vLLM's qwen3_coder
    ("five", {"type": "integer"}, "five"),  # left raw: the tool's validation reports it to the model
    ("2.5", {"type": "number"}, 2.5),
    ("3", {"type": "number"}, 3),
    ("true", {"type": "boolean"}, True),
    ("False", {"type": "boolean"}, False),
    ('{"a": 1}', {"type": "object"}, {"a": 1}),
    ("[1, 'x']", {"type": "array"}, [1, "x"]),
    ("7", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, 7),
    ("null", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, None),
    ("  spaced  ", {"type": "string"}, "  spaced  "),
    ("42", None, "42"),
])
def test_coerce_value(raw: str, schema: dict | None, value: object) -> None:
    result = coerce_value(raw, schema)
    assert result == value and type(result) is type(value)
