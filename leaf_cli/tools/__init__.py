"""The five tools FrogNano was trained on. Their names, parameters and observation texts are a wire protocol."""

from leaf_cli.tools.base import Tool, ToolResult
from leaf_cli.tools.registry import TOOLS, find_tool, run_tool_call, tool_schemas
from leaf_cli.tools.workspace import Workspace

__all__ = ["TOOLS", "Tool", "ToolResult", "Workspace", "find_tool", "run_tool_call", "tool_schemas"]
