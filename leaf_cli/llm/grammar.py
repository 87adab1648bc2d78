"""GBNF grammars that hold a reply to free text followed by well-formed tool calls for the given tools.

Used by the llama.cpp engine with `constrain_tools=True`, so that even a tiny model (SmolLM2-135M) writes calls
leaf can parse: the tool name is one of the tools, parameters are the tool's own, required ones present,
values well-typed. Two call formats, the model's own: Qwen3-Coder XML for Qwen3.5-style templates, Hermes
JSON otherwise. Simplifications (say so, they shape what the model can write): free text and reasoning may
not contain `<`; an XML string value may not contain `</`; JSON object properties come required first, then
optional ones in schema order.
"""

from __future__ import annotations

import json
from typing import Any

from leaf_cli.llm.template import ToolFormat

_JSON_RULES = r"""
ws ::= [ \t\n]*
jstr ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] ) )* "\""
jint ::= "-"? [0-9]+
jnum ::= "-"? [0-9]+ ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
jbool ::= "true" | "false"
jnull ::= "null"
jval ::= jobj | jarr | jstr | jnum | jbool | jnull
jobj ::= "{" ws ( jstr ws ":" ws jval ws ( "," ws jstr ws ":" ws jval ws )* )? "}"
jarr ::= "[" ws ( jval ws ( "," ws jval ws )* )? "]"
xstr ::= ( [^<] | "<" [^/] )*
text ::= [^<]*
"""

_TYPE_RULES = {"string": "jstr", "integer": "jint", "number": "jnum", "boolean": "jbool", "null": "jnull",
               "object": "jobj", "array": "jarr"}


def tool_call_grammar(tools: list[dict[str, Any]], fmt: ToolFormat, *, require_call: bool = False,
                      in_reasoning: bool = False, parallel: bool = True) -> str:
    """A GBNF grammar: optional reasoning (when the prompt opened `<think>`), free text, then tool calls.

    `require_call`: the reply is calls only, starting at once (as llama.cpp's forced tool_choice); otherwise
    free text may come first and the calls are optional, so the model can also answer in plain text and stop.
    `parallel`: several calls per reply; off, at most one (tiny models otherwise repeat a call until cut).
    """
    rules: list[str] = []
    alternatives = []
    for index, tool in enumerate(tools):
        fn = tool.get("function", tool)
        alternatives.append(f"tool{index}")
        rules += _tool_rules(f"tool{index}", fn["name"], fn.get("parameters", {}), fmt)
    if not alternatives:
        raise ValueError("a tool-call grammar needs at least one tool")
    calls = 'call ( "\\n" call )*' if parallel else "call"
    body = calls if require_call else f"text ( {calls} )?"
    head = '"<tool_call>\\n<function="' if fmt == "qwen_xml" else '"<tool_call>\\n{\\"name\\": \\""'
    # After `</think>` at most a few blanks (the template writes "\n\n"): unbounded whitespace is a runaway too.
    root = f'root ::= [^<]* "</think>" [ \\t\\n]{{0,4}} {body}' if in_reasoning else f"root ::= {body}"
    lines = [root, f"call ::= {head} ( {' | '.join(alternatives)} )", *rules]
    return "\n".join(lines) + _JSON_RULES


def _tool_rules(rule: str, name: str, params: dict[str, Any], fmt: ToolFormat) -> list[str]:
    props: dict[str, Any] = params.get("properties", {})
    required = [k for k in props if k in params.get("required", [])]
    optional = [k for k in props if k not in required]
    rules: list[str] = []
    values = {}
    for i, key in enumerate(props):
        values[key] = f"{rule}-v{i}"
        rules.append(f"{values[key]} ::= {_value_rule(props[key], fmt)}")
    if fmt == "qwen_xml":
        def param(key: str) -> str:
            return f'"<parameter={_esc(key)}>\\n" {values[key]} "\\n</parameter>\\n"'
        parts = [param(k) for k in required] + [f"( {param(k)} )?" for k in optional]
        rules.insert(0, f'{rule} ::= "{_esc(name)}>\\n" {" ".join(parts)} "</function>\\n</tool_call>"')
        return rules
    rules.insert(0, f'{rule} ::= "{_esc(name)}\\", \\"arguments\\": " {rule}-args "}}\\n</tool_call>"')
    rules.append(f"{rule}-args ::= {_json_object(required, optional, values)}")
    return rules


def _json_object(required: list[str], optional: list[str], values: dict[str, str]) -> str:
    def pair(key: str) -> str:
        return f'"{_esc(json.dumps(key))}" ws ":" ws {values[key]} ws'
    if required:
        parts = [pair(required[0])] + [f'"," ws {pair(k)}' for k in required[1:]]
        parts += [f'( "," ws {pair(k)} )?' for k in optional]
        return '"{" ws ' + " ".join(parts) + ' "}"'
    if not optional:
        return '"{" ws "}"'
    anyone = " | ".join(f"( {pair(k)} )" for k in optional)
    return f'"{{" ws ( ( {anyone} ) ( "," ws ( {anyone} ) )* )? "}}"'


def _value_rule(schema: dict[str, Any], fmt: ToolFormat) -> str:
    """A value of this schema: JSON in Hermes calls; raw text (strings) or JSON (the rest) in XML calls."""
    if "enum" in schema:
        literals = [v if fmt == "qwen_xml" and isinstance(v, str) else json.dumps(v) for v in schema["enum"]]
        return " | ".join(f'"{_esc(str(v))}"' for v in literals)
    kinds = _kinds(schema)
    if not kinds:
        return "xstr" if fmt == "qwen_xml" else "jval"
    rules = [("xstr" if fmt == "qwen_xml" and k == "string" else _TYPE_RULES.get(k, "jval")) for k in kinds]
    if fmt == "qwen_xml" and "null" in kinds and "xstr" not in rules:
        rules = [r for r in rules if r != "jnull"] + ["jnull"]
    return " | ".join(dict.fromkeys(rules))


def _kinds(schema: dict[str, Any]) -> list[str]:
    raw = schema.get("type")
    kinds = raw if isinstance(raw, list) else [raw] if isinstance(raw, str) else []
    for option in schema.get("anyOf", []) + schema.get("oneOf", []):
        kinds = kinds + _kinds(option)
    return list(dict.fromkeys(kinds))


def _esc(text: str) -> str:
    """Escape text for a GBNF string literal."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
