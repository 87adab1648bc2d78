"""`leaf fix`: one agent run on the issue, with a checkpoint before and a review after; `leaf replay`."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from leaf_cli.cli import options as opt
from leaf_cli.cli.common import user_errors


def register(app: typer.Typer) -> None:
    app.command("fix")(fix)
    app.command("replay")(replay)


@user_errors
def fix(
    text: Annotated[Optional[str], typer.Argument(help="The issue, or - to read it from stdin.", show_default=False, metavar="TEXT")] = None,
    issue_file: Annotated[Optional[Path], typer.Option("--issue-file", help="Read the issue from a file.", metavar="PATH")] = None,
    gh: Annotated[Optional[str], typer.Option("--gh", help="Fetch GitHub issue N with `gh issue view`.", metavar="TEXT")] = None,
    workdir: opt.Workdir = None,
    model: opt.Model = None,
    base_url: opt.BaseUrl = None,
    max_turns: opt.MaxTurns = None,
    max_time: opt.MaxTime = None,
    n_ctx: opt.NCtx = None,
    trajectory: Annotated[Optional[Path], typer.Option("--trajectory", help="Also write the trajectory here.", metavar="PATH")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout, nothing else.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Never ask: yolo mode, keep the changes.")] = False,
    mode: opt.Mode = None,
    sandbox: opt.Sandbox = None,
    network: opt.Network = None,
    pass_env: opt.PassEnv = None,
    quiet: opt.Quiet = None,
    branch: Annotated[Optional[str], typer.Option("--branch", help="Create and switch to this branch first.", metavar="TEXT")] = None,
    constrain_tools: opt.ConstrainTools = None,
    temperature: opt.Temperature = None,
    seed: opt.Seed = None,
    thinking_budget: opt.ThinkingBudget = None,
    max_tokens: opt.MaxTokens = None,
    kv_cache: opt.KvCache = None,
    prefix_cache: opt.PrefixCache = None,
    speculate: opt.Speculate = None,
    continue_: Annotated[bool, typer.Option("--continue", "-c", help="Continue the last run in this repository (a `leaf chat` too). A new "
                                 "process has no token cache: its first turn evaluates the whole saved conversation again, "
                                 "later turns only their new tokens. `leaf chat` keeps the cache between messages.")] = False,
    continue_undone: Annotated[bool, typer.Option("--continue-undone", help="--continue even when the last run "
                                                   "is undone (its conversation then describes changes that are "
                                                   "no longer in the files).")] = False,
) -> None:
    """Fix an issue in the current git repository, then review the change.

    Examples:

    \b
      leaf fix "add() in calc.py subtracts instead of adding"
      gh issue view 123 | leaf fix -
      leaf fix --model smollm2-135m --yes --issue-file ISSUE.md
    """
    from leaf_cli.cli import fix_session as session

    _sigterm_as_interrupt()
    root = (workdir or Path.cwd()).expanduser().resolve()
    flags = {"model": model, "base_url": base_url, "max_turns": max_turns, "max_time": max_time, "n_ctx": n_ctx, "mode": mode,
             "sandbox": sandbox, "network": network, "pass_env": pass_env, "quiet": quiet, "constrain_tools": constrain_tools,
             "temperature": temperature, "seed": seed, "thinking_budget": thinking_budget,
             "max_tokens": max_tokens, "kv_cache": kv_cache, "prefix_cache": prefix_cache, "speculate": speculate}
    plan = session.prepare(root, flags, text=text, issue_file=issue_file, gh=gh, yes=yes, json_out=json_out,
                           continue_=continue_, branch=branch, trajectory=trajectory,
                           continue_undone=continue_undone)
    result = session.execute(plan)
    if json_out:
        from leaf_cli.agent.trajectory import json_line  # valid UTF-8 also for a file name that is not

        sys.stdout.write(json_line(result.as_json()) + "\n")
        sys.stdout.flush()
    raise typer.Exit(0 if result.exit_reason == "final_answer" else 1)


@user_errors
def replay(
    trajectory: Annotated[Path, typer.Argument(help="A trajectory file (JSON lines) from `leaf fix`.", metavar="TRAJECTORY")],
    workdir: Annotated[Optional[Path], typer.Option("--workdir", "-C", help="Copy this folder instead of the run's start state.", metavar="PATH")] = None,
    sandbox: opt.Sandbox = None,
) -> None:
    """Re-run a trajectory's tool calls on a fresh copy and say whether every observation matches.

    Examples:

    \b
      leaf replay run.jsonl
      leaf replay run.jsonl --workdir ../my-repo --sandbox none
    """
    from leaf_cli.cli.fix_replay import replay_trajectory

    mismatches = replay_trajectory(trajectory.expanduser(), workdir, sandbox=sandbox)
    raise typer.Exit(0 if mismatches == 0 else 1)


def _sigterm_as_interrupt() -> None:
    """SIGTERM ends the run like Ctrl-C: the tool is killed and the trajectory saved as `interrupted`."""

    def handler(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    if os.name == "posix":
        signal.signal(signal.SIGTERM, handler)

