"""Fixtures for the chat-format and llama.cpp tests: the reference Qwen3.5 template and tool schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

REFERENCE = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference"


@pytest.fixture(scope="session")
def qwen_template_source() -> str:
    """The real Qwen3.5 chat template (../shared/reference), the format FrogNano was trained on."""
    path = REFERENCE / "qwen3_5.chat_template.jinja"
    if not path.is_file():
        pytest.skip(f"reference template not found at {path} (the ../shared folder is absent)")
    return path.read_text(encoding="utf-8")


def schema(name: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": f"The {name} tool.",
                                             "parameters": {"type": "object", "properties": props, "required": required}}}


@pytest.fixture
def tools() -> list[dict[str, Any]]:
    """Schemas shaped like leaf's five tools (pydantic output, with an Optional field and an object field)."""
    return [
        schema("Read", {"file_path": {"type": "string"}, "offset": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                        "limit": {"type": "integer"}}, ["file_path"]),
        schema("Edit", {"file_path": {"type": "string"}, "old_string": {"type": "string"},
                        "new_string": {"type": "string"}, "replace_all": {"type": "boolean"}},
               ["file_path", "old_string", "new_string"]),
        schema("Bash", {"command": {"type": "string"}, "timeout": {"type": "number"},
                        "env": {"type": "object"}, "args": {"type": "array"}}, ["command"]),
    ]
