"""Render a conversation with the model's own Jinja chat template, as Hugging Face and llama.cpp do.

The template comes from the GGUF metadata (`tokenizer.chat_template`). It runs in an immutable sandbox with
what HF templates expect: `raise_exception`, `strftime_now`, an HF-style `tojson` (no HTML escaping, keeps
non-ASCII), a `from_json` filter (llama.cpp's Qwen3.5 template uses it), loop controls, `trim_blocks` and
`lstrip_blocks`. Models without a template get `CHATML_TEMPLATE`, ChatML with Hermes-style tools.

Some templates ignore tools (SmolLM2's plain ChatML). For those, leaf puts a Hermes tools block into the
system message, writes assistant tool calls into the content and sends tool results as `<tool_response>`
user turns, so the model still sees the tools, its calls and their results.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal

ToolFormat = Literal["qwen_xml", "hermes"]

CHATML_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, "
    "\"arguments\": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'assistant' and not message.tool_calls) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}{{- '<|im_start|>assistant' }}"
    "{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}"
    "{%- for tool_call in message.tool_calls %}{%- set tc = tool_call.function or tool_call %}"
    "{{- '\\n<tool_call>\\n{\"name\": \"' + tc.name + '\", \"arguments\": ' + tc.arguments | tojson + '}\\n</tool_call>' }}"
    "{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""ChatML with Hermes tool calls (Qwen2.5's convention), for GGUF files that carry no chat template."""

HERMES_TOOLS_PREAMBLE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>{tools}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}}\n</tool_call>"
)


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    # HF's override: Jinja's own tojson escapes HTML characters, which no chat template wants.
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _raise_exception(message: str) -> None:
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


@lru_cache(maxsize=8)
def _compile(source: str) -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    env.filters["from_json"] = json.loads
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env.from_string(source)


class TemplateRenderError(Exception):
    """The chat template refused the conversation (its own `raise_exception`) or is not valid Jinja."""


class ChatTemplate:
    """A model's chat template plus the special tokens it refers to."""

    def __init__(self, source: str | None, bos_token: str = "", eos_token: str = "<|im_end|>") -> None:
        self.source = source or CHATML_TEMPLATE
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.handles_tools = "tools" in self.source
        try:
            self._template = _compile(self.source)
        except Exception as exc:  # jinja2.TemplateSyntaxError and friends
            raise TemplateRenderError(f"chat template is not valid Jinja: {exc}") from exc

    @property
    def tool_format(self) -> ToolFormat:
        """How this template writes tool calls: Qwen3-Coder XML or Hermes JSON."""
        return "qwen_xml" if "<function=" in self.source else "hermes"

    @property
    def end_token(self) -> str:
        """The text that ends an assistant turn (ChatML's `<|im_end|>` when the template uses it)."""
        return "<|im_end|>" if "<|im_end|>" in self.source else self.eos_token

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
               add_generation_prompt: bool = False, enable_thinking: bool = True) -> str:
        """Render `messages` (`Message.to_template()` dicts) and OpenAI tool schemas to prompt text."""
        if tools and not self.handles_tools:
            messages = adapt_for_tools(messages, tools)
            tools = None
        try:
            return self._template.render(
                messages=messages, tools=tools or None, add_generation_prompt=add_generation_prompt,
                enable_thinking=enable_thinking, bos_token=self.bos_token, eos_token=self.eos_token,
            )
        except Exception as exc:
            raise TemplateRenderError(f"chat template failed: {exc}") from exc


    def render_messages(self, messages: list[Any], tools: list[dict[str, Any]], add_generation_prompt: bool,
                        enable_thinking: bool) -> str:
        """`render` over `Message` objects: the `increment.Render` that token-level engines use."""
        return self.render([m.to_template() for m in messages], tools, add_generation_prompt=add_generation_prompt,
                           enable_thinking=enable_thinking)


def adapt_for_tools(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Spell tools, calls and results out as Hermes text for a template that ignores them."""
    block = HERMES_TOOLS_PREAMBLE.format(tools="".join("\n" + _tojson(t) for t in tools))
    out: list[dict[str, Any]] = []
    if messages and messages[0]["role"] == "system":
        out.append({"role": "system", "content": (messages[0].get("content") or "") + "\n\n" + block})
        messages = messages[1:]
    else:
        out.append({"role": "system", "content": block})
    for message in messages:
        if message["role"] == "tool":
            out.append({"role": "user", "content": f"<tool_response>\n{message.get('content') or ''}\n</tool_response>"})
        elif message["role"] == "assistant" and message.get("tool_calls"):
            calls = [hermes_call(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]
            text = "\n".join(x for x in [(message.get("content") or "").strip(), *calls] if x)
            out.append({"role": "assistant", "content": text})
        else:
            out.append(message)
    return out


def hermes_call(name: str, arguments: Any) -> str:
    """One Hermes tool call as a model writes it."""
    if isinstance(arguments, str):
        arguments = json.loads(arguments or "{}")
    return "<tool_call>\n" + _tojson({"name": name, "arguments": arguments}) + "\n</tool_call>"
