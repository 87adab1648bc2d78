"""The base of every tool's argument model: lenient input, and the exact JSON schema FrogNano was trained on.

The schema is part of the prompt (chat templates render it), so it must match the harness byte for byte:
`{"type": "object", "properties": {name: {"type": ..., "description": ...}}, "required": [...]}` with no
titles, no defaults and no `anyOf [..., null]` that pydantic would emit for optional fields.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue


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
