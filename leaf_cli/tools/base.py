"""What a tool is: a name, a description, a pydantic argument model and a run function."""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

from pydantic import BaseModel

from leaf_cli.tools.workspace import Workspace

A = TypeVar("A", bound=BaseModel)


class ToolResult(BaseModel):
    """The observation text the model sees, and whether it reports a failure."""

    text: str
    is_error: bool = False


class ToolFailure(Exception):
    """A failure whose observation is `KIND: message`, for a case where leaf words FrogNano's text itself
    (the harness raised a Python exception there that leaf avoids raising)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Tool(BaseModel, Generic[A]):
    """A tool is data plus a run function; nothing is bound at import time.

    `run` gets `args.from_call(arguments)` (the raw JSON for the five Leaf tools, a validated model for the
    others) and raises on failure; `registry.run_tool_call` turns the exception into `ExceptionType: message`.
    """

    model_config = {"arbitrary_types_allowed": True}

    name: str
    description: str
    args: type[A]
    run: Callable[[Any, Workspace], str]

    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema the model sees."""
        params = self.args.model_json_schema()
        params.pop("title", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": params}}
