"""Bash: run `bash -lc COMMAND` in the workdir; report the exit code and both output streams."""

from __future__ import annotations

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from leaf_cli.tools.args import ToolArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.output import BASH_CHARS, HeadBuffer, fit
from leaf_cli.tools.process import run_captured
from leaf_cli.tools.workspace import Workspace

BASH_PATH = "/bin/bash"
MAX_TIMEOUT = 600.0
"""No command runs longer than this, whatever timeout the model asks for."""
MIN_TIMEOUT = 0.1


class BashArgs(ToolArgs):
    command: str = Field(description="Command to run.")
    description: str | None = Field(None, description="Short description of the command.")
    timeout: float | None = Field(None, description="Optional timeout in seconds.")
    # Accepted as the harness did (Claude Code's name), but not shown: the model was trained without it.
    timeout_ms: SkipJsonSchema[float | None] = None


def timeout_seconds(args: BashArgs, default: float) -> float:
    """The timeout in seconds: `timeout_ms` first; a `timeout` over 1000 is milliseconds; capped at 600 s."""
    if args.timeout_ms is not None:
        seconds = args.timeout_ms / 1000.0
    elif args.timeout is not None:
        seconds = args.timeout / 1000.0 if args.timeout > 1000 else args.timeout
    else:
        seconds = default
    return min(MAX_TIMEOUT, max(MIN_TIMEOUT, seconds))


def run_bash(args: BashArgs, workspace: Workspace) -> str:
    if not args.command.strip():
        raise ValueError("command is empty; pass the shell command to run")
    timeout = timeout_seconds(args, workspace.bash_default_timeout)
    argv = [*workspace.bash_prefix, BASH_PATH, "-lc", args.command]
    run = run_captured(argv, workspace.root, workspace.env, timeout, BASH_CHARS)
    head = f"Timed out after {timeout:.1f}s" if run.timed_out else f"Exit code: {run.returncode}"
    return render(head, run.stdout, run.stderr)


def render(head: str, stdout: HeadBuffer, stderr: HeadBuffer, cap: int = BASH_CHARS) -> str:
    """`HEAD\\nSTDOUT:\\n…\\nSTDERR:\\n…` in at most `cap` chars.

    Output that fits is shown whole, exactly as the harness did. Otherwise each stream that overflows its
    share is cut with its own `[truncated K chars]` line, so a flood on stdout cannot hide stderr.
    """
    fixed = len(head) + len("\nSTDOUT:\n") + len("\nSTDERR:\n")
    budget = cap - fixed
    if stdout.total + stderr.total <= budget:
        out_budget, err_budget = stdout.total, stderr.total
    else:
        out_budget, err_budget = _share(budget, stdout.total, stderr.total)
    out = fit(stdout.text, stdout.total, out_budget)
    err = fit(stderr.text, stderr.total, err_budget)
    return f"{head}\nSTDOUT:\n{out}\nSTDERR:\n{err}"


def _share(budget: int, out: int, err: int) -> tuple[int, int]:
    """Split `budget` chars between two streams: a stream needing less than half gets all it needs."""
    half = budget // 2
    if err <= half:
        return budget - err, err
    if out <= half:
        return out, budget - out
    return budget - half, half


BASH = Tool(name="Bash", description="Run a shell command in the repository workdir.", args=BashArgs, run=run_bash)
