"""`finish`: the explicit action that ends an R2E-style episode (the harness names it as its final tool)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from leaf_cli.tools.args import ToolArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.workspace import Workspace


class FinishArgs(ToolArgs):
    command: Literal["submit"] = Field("submit", description="Always `submit`.")
    result: str | None = Field(None, description="A short summary of what was changed.")


def run_finish(args: FinishArgs, workspace: Workspace) -> str:
    return "Submitted. " + (args.result.strip() if args.result and args.result.strip() else "No summary given.")


FINISH = Tool(
    name="finish",
    description="Submit your work and end the task. Call it once the fix is done and checked.",
    args=FinishArgs, run=run_finish,
)
