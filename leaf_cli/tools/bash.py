"""Bash: run `bash -lc COMMAND` in the workdir; report the exit code and both output streams.

As FrogNano's harness ran it (`subprocess.run` with a timeout): the call returns when the command has
exited and its pipes have closed; the observation is `Exit code: N\\nSTDOUT:\\n…\\nSTDERR:\\n…`, or on timeout
`Timed out after X.Ys` with the output so far (then decoded with replacement, newlines untouched), and the
whole is cut at 30,000 chars with `\\n[truncated K chars]`. Output that is not UTF-8 gives the harness's
`UnicodeDecodeError: …`. Background jobs keep running until the episode ends (jobs.py).
"""

from __future__ import annotations

import math

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from leaf_cli.tools.args import CallArgs, LeafArgs
from leaf_cli.tools.base import Tool, ToolFailure
from leaf_cli.tools.output import BASH_CHARS, HeadBuffer, truncation_marker
from leaf_cli.tools.process import run_command
from leaf_cli.tools import texts
from leaf_cli.tools.workspace import Workspace

BASH_PATH = "/bin/bash"
MAX_TIMEOUT = 600.0
"""The r2e profile's ceiling on a command's time (the Leaf Bash tool has none unless the workspace sets one)."""
MIN_TIMEOUT = 0.1


class BashArgs(LeafArgs):
    command: str = Field(description="Command to run.")
    description: str | None = Field(None, description="Short description of the command.")
    timeout: float | None = Field(None, description="Optional timeout in seconds.")
    # Accepted as the harness did (Claude Code's name), but not shown: the model was trained without it.
    timeout_ms: SkipJsonSchema[float | None] = None


def timeout_seconds(args: CallArgs, default: float, ceiling: float | None = None) -> float:
    """FrogNano's reading: `timeout_ms` first; a `timeout` over 1000 is milliseconds; at least 0.1 s.

    Infinity is the one value its harness crashed on (its pod call took `int()` of it); here it is that
    error as an observation.
    """
    if args.get("timeout_ms") is not None:
        seconds = max(MIN_TIMEOUT, float(args.get("timeout_ms")) / 1000.0)
    elif args.get("timeout") is None:
        seconds = float(default)
    else:
        value = float(args.get("timeout"))
        seconds = max(MIN_TIMEOUT, value / 1000.0 if value > 1000 else value)
    if math.isinf(seconds):
        raise OverflowError("cannot convert float infinity to integer")
    return seconds if ceiling is None else min(ceiling, seconds)


def run_bash(args: CallArgs, workspace: Workspace) -> str:
    command = args.text("command")
    if not command:
        raise ValueError(texts.REQUIRED.format(key="command"))
    timeout = timeout_seconds(args, workspace.bash_default_timeout, workspace.bash_max_timeout)
    argv = [*workspace.bash_prefix, BASH_PATH, "-lc", command]
    ran = run_command(argv, workspace.root, workspace.env, max(MIN_TIMEOUT, timeout), BASH_CHARS, workspace.jobs.add)
    if ran.timed_out:
        return render(texts.timed_out(timeout), ran.stdout.loose, ran.stderr.loose)
    error = ran.stdout.error or ran.stderr.error
    if error is not None:
        raise ToolFailure("UnicodeDecodeError", error)
    return render(texts.exit_code(ran.returncode), ran.stdout.text, ran.stderr.text)


def render(head: str, stdout: HeadBuffer, stderr: HeadBuffer, cap: int = BASH_CHARS) -> str:
    """`HEAD\\nSTDOUT:\\n…\\nSTDERR:\\n…`, its first `cap` chars and then `\\n[truncated K chars]` when longer.

    Each buffer keeps the first `cap` chars of its stream, which is all the cut can show of it.
    """
    text = texts.bash_layout(head, stdout.text, stderr.text)
    total = len(head) + texts.BASH_FIXED + stdout.total + stderr.total
    if total <= cap:
        return text
    return text[:cap] + truncation_marker(total - cap)


BASH = Tool(name="Bash", description="Run a shell command in the repository workdir.", args=BashArgs, run=run_bash)
