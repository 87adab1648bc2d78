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


class Tool(BaseModel, Generic[A]):
    """A tool is data plus a run function; nothing is bound at import time.

    `run` raises on failure; `registry.run_tool_call` turns the exception into `ExceptionType: message`.
    """

    model_config = {"arbitrary_types_allowed": True}

    name: str
    description: str
    args: type[A]
    run: Callable[[A, Workspace], str]

    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema the model sees."""
        params = self.args.model_json_schema()
        params.pop("title", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": params}}
