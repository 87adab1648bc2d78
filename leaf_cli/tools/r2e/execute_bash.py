"""`execute_bash`: run one shell command in the repository, R2E-Gym style. Same process handling as leaf's
Bash (process group killed on timeout, output capped while it streams); its own observation text."""

from __future__ import annotations

from pydantic import Field

from leaf_cli.tools.args import ToolArgs
from leaf_cli.tools.base import Tool
from leaf_cli.tools.bash import BASH_PATH, MAX_TIMEOUT
from leaf_cli.tools.output import BASH_CHARS, fit
from leaf_cli.tools.process import run_captured
from leaf_cli.tools.workspace import Workspace


class ExecuteBashArgs(ToolArgs):
    cmd: str = Field(description="The bash command to run in the repository root.")


def run_execute_bash(args: ExecuteBashArgs, workspace: Workspace) -> str:
    if not args.cmd.strip():
        raise ValueError("cmd is empty; pass the command to run")
    timeout = min(MAX_TIMEOUT, workspace.bash_default_timeout)
    argv = [*workspace.bash_prefix, BASH_PATH, "-lc", args.cmd]
    run = run_captured(argv, workspace.root, workspace.env, timeout, BASH_CHARS)
    half = BASH_CHARS // 2
    out = fit(run.stdout.text, run.stdout.total, half)
    err = fit(run.stderr.text, run.stderr.total, half)
    status = (f"[command timed out after {timeout:g}s; output so far]" if run.timed_out
              else f"[exit status {run.returncode}]")
    return f"{status}\n[output]\n{out}\n[errors]\n{err}"


EXECUTE_BASH = Tool(
    name="execute_bash",
    description="Run a bash command in the repository root and return its exit status, output and errors.",
    args=ExecuteBashArgs, run=run_execute_bash,
)
