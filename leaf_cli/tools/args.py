"""The base of every tool's argument model: lenient input, and the exact JSON schema FrogNano was trained on.

The schema is part of the prompt (chat templates render it), so it must match the harness byte for byte:
`{"type": "object", "properties": {name: {"type": ..., "description": ...}}, "required": [...]}` with no
titles, no defaults and no `anyOf [..., null]` that pydantic would emit for optional fields.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

from leaf_cli.tools import texts


def _wire_schema(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Rewrite pydantic's schema in place into the harness's plain form (order: type, properties, required)."""
    properties = {}
    for name, prop in schema.get("properties", {}).items():
        branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
        wire = {"type": branches[0].get("type", "string")}
        if "description" in prop:
            wire["description"] = prop["description"]
        properties[name] = wire
    required = list(schema.get("required", []))
    schema.clear()
    schema.update({"type": "object", "properties": properties, "required": required})


class _KeepOrder(GenerateJsonSchema):
    """Pydantic sorts schema keys alphabetically; the harness's order (type first) is kept instead."""

    def sort(self, value: JsonSchemaValue, parent_key: str | None = None) -> JsonSchemaValue:
        return value


class ToolArgs(BaseModel):
    """Arguments as the model sends them: unknown keys ignored, empty strings read as "not given"."""

    model_config = ConfigDict(json_schema_extra=_wire_schema)

    # The harness accepted `path` where a tool expects `file_path` (small models mix them up).
    path_alias: ClassVar[str | None] = None

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The schema the model sees, in the harness's form and key order."""
        if len(args) < 3:
            kwargs.setdefault("schema_generator", _KeepOrder)
        return super().model_json_schema(*args, **kwargs)

    @model_validator(mode="before")
    @classmethod
    def _lenient(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if cls.path_alias and data.get(cls.path_alias) in (None, "") and data.get("path") not in (None, ""):
            data[cls.path_alias] = data.pop("path")
        for name, field in cls.model_fields.items():
            if not field.is_required() and data.get(name) == "":
                data.pop(name)
        return data

    @classmethod
    def from_call(cls, arguments: dict[str, Any]) -> Any:
        """The arguments a tool's run function gets: the validated model (tools other than the five)."""
        return cls.model_validate(arguments)


class LeafArgs(ToolArgs):
    """The five Leaf tools' arguments. The typed fields only make the schema; the run functions read the
    model's JSON as FrogNano's harness read it (`CallArgs`), so a bad argument gets its message, not
    pydantic's."""

    @classmethod
    def from_call(cls, arguments: dict[str, Any]) -> CallArgs:
        return CallArgs(arguments)


class CallArgs:
    """A call's raw JSON arguments with FrogNano's harness's readings of them (its coercions and messages).

    Where a reading would lose data it is stricter, and says so in its docstring.
    """

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw if isinstance(raw, dict) else {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    def path(self, key: str) -> Any:
        """The path under `key` or, as the harness accepted, `path`; `KEY is required` when neither is set."""
        value = self.raw.get(key) or self.raw.get("path")
        if not value:
            raise ValueError(texts.REQUIRED.format(key=key))
        return value

    def text(self, key: str) -> str:
        """`str()` of the value, "" for a missing or empty one."""
        return str(self.raw.get(key) or "")

    def content(self, key: str) -> str:
        """Text to write. Stricter than the harness, which wrote "" for a missing value (emptying the file)
        and Python's repr for an object: a missing or null value is an error, an object or list is JSON."""
        value = self.raw.get(key)
        if value is None:
            raise ValueError(texts.REQUIRED.format(key=key))
        if isinstance(value, (dict, list)):
            return json.dumps(value, ensure_ascii=False, indent=2)
        return str(value)

    def optional_int(self, key: str, default: int) -> int:
        """`int()` of the value (so 2.0 is 2 and "x" is an error), `default` when it is missing or ""."""
        value = self.raw.get(key)
        if value is None or (isinstance(value, str) and value == ""):
            return default
        return int(value)

    def truthy(self, key: str) -> bool:
        """True for true, 1 and the strings 1/true/yes/on (any case, surrounding spaces ignored)."""
        value = self.raw.get(key)
        if isinstance(value, bool):
            return value
        return str(value or "").strip().lower() in {"1", "true", "yes", "on"}
