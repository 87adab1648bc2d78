"""The tool registry: look a tool up by name (case-insensitively) and run one call safely."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from leaf_cli.llm.messages import ToolCall
from leaf_cli.tools.base import Tool, ToolFailure, ToolResult
from leaf_cli.tools.bash import BASH
from leaf_cli.tools.edit import EDIT
from leaf_cli.tools.glob import GLOB
from leaf_cli.tools.read import READ
from leaf_cli.tools import texts
from leaf_cli.tools.workspace import OutsideWorkspaceError, Workspace
from leaf_cli.tools.write import WRITE

TOOLS: tuple[Tool, ...] = (READ, WRITE, EDIT, GLOB, BASH)
HOSTED: tuple[Tool, ...] = (READ, WRITE, EDIT, GLOB)
"""The tools a workspace's `file_host` runs inside the sandbox (Bash is wrapped in it already)."""


def find_tool(name: str, tools: tuple[Tool, ...] = TOOLS) -> Tool | None:
    """The tool called `name`, matched case-insensitively (the paper writes tool names in lower case)."""
    wanted = name.strip().lower()
    return next((t for t in tools if t.name.lower() == wanted), None)


def tool_schemas(tools: tuple[Tool, ...] = TOOLS) -> list[dict[str, Any]]:
    return [t.schema() for t in tools]


def run_tool_call(call: ToolCall, workspace: Workspace, tools: tuple[Tool, ...] = TOOLS) -> ToolResult:
    """Run one call. Every failure becomes the observation `ExceptionType: message`; nothing is raised."""
    tool = find_tool(call.name, tools)
    if tool is None:
        return ToolResult(text=texts.UNKNOWN_TOOL.format(name=call.name), is_error=True)
    if workspace.file_host is not None and any(tool is hosted for hosted in HOSTED):
        return workspace.file_host.call(tool.name, call.arguments)  # the host runs this same function
    try:
        args = tool.args.from_call(call.arguments)
        return ToolResult(text=tool.run(args, workspace))
    except ValidationError as exc:
        return ToolResult(text=f"ValidationError: {_describe(exc)}", is_error=True)
    except ToolFailure as exc:
        return ToolResult(text=f"{exc.kind}: {exc}", is_error=True)
    except OutsideWorkspaceError as exc:  # the permission layer's refusal, in the form the gate's take
        return ToolResult(text=f"PermissionError: {exc}", is_error=True)
    except Exception as exc:  # noqa: BLE001 - the model sees every failure as text
        return ToolResult(text=f"{type(exc).__name__}: {exc}", is_error=True)


def _describe(exc: ValidationError) -> str:
    """A short, model-readable validation message: which argument, what is wrong."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
