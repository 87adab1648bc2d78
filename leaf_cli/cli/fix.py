"""`leaf fix`: one agent run on the issue, with a checkpoint before and a review after; `leaf replay`."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from leaf_cli.cli.common import user_errors


def register(app: typer.Typer) -> None:
    app.command("fix")(fix)
    app.command("replay")(replay)


@user_errors
def fix(
    text: Annotated[Optional[str], typer.Argument(help="The issue, or - to read it from stdin.", show_default=False)] = None,
    issue_file: Annotated[Optional[Path], typer.Option("--issue-file", help="Read the issue from a file.")] = None,
    gh: Annotated[Optional[str], typer.Option("--gh", help="Fetch GitHub issue N with `gh issue view`.")] = None,
    workdir: Annotated[Optional[Path], typer.Option("--workdir", "-C", help="Where to work (default: here).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Registry name, .gguf, hf:..., replay:PATH.")] = None,
    base_url: Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible server URL.")] = None,
    max_turns: Annotated[Optional[int], typer.Option("--max-turns", min=1, help="Most assistant turns.")] = None,
    max_time: Annotated[Optional[float], typer.Option("--max-time", min=1, help="Wall-clock limit in seconds.")] = None,
    n_ctx: Annotated[Optional[int], typer.Option("--n-ctx", min=256, help="Context window (in-process engine).")] = None,
    trajectory: Annotated[Optional[Path], typer.Option("--trajectory", help="Also write the trajectory here.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout, nothing else.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Never ask: yolo mode, keep the changes.")] = False,
    mode: Annotated[Optional[str], typer.Option("--mode", help="ask | auto-edit | yolo.")] = None,
    sandbox: Annotated[Optional[str], typer.Option("--sandbox", help="none | bwrap (no network, read-only outside).")] = None,
    pass_env: Annotated[Optional[list[str]], typer.Option("--pass-env", help="Let Bash see this secret variable.")] = None,
    quiet: Annotated[Optional[bool], typer.Option("--quiet/--no-quiet", "-q", help="Hide the model's reasoning.")] = None,
    branch: Annotated[Optional[str], typer.Option("--branch", help="Create and switch to this branch first.")] = None,
    constrain_tools: Annotated[Optional[bool], typer.Option("--constrain-tools/--no-constrain-tools",
                               help="Grammar-constrain replies to text + well-formed tool calls (in-process engine).")] = None,
    temperature: Annotated[Optional[float], typer.Option("--temperature", min=0, help="Sampling temperature (default: the model's).")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Sampling seed, for reproducible runs.")] = None,
    continue_: Annotated[bool, typer.Option("--continue", "-c", help="Continue the last run in this repository (a `leaf chat` too). A new "
                                 "process has no token cache: its first turn evaluates the whole saved conversation again, "
                                 "later turns only their new tokens. `leaf chat` keeps the cache between messages.")] = False,
) -> None:
    """Fix an issue in the current git repository, then review the change."""
    from leaf_cli.cli import fix_session as session

    _sigterm_as_interrupt()
    root = (workdir or Path.cwd()).expanduser().resolve()
    flags = {"model": model, "base_url": base_url, "max_turns": max_turns, "max_time": max_time, "n_ctx": n_ctx, "mode": mode,
             "sandbox": sandbox, "pass_env": pass_env, "quiet": quiet, "constrain_tools": constrain_tools,
             "temperature": temperature, "seed": seed}
    plan = session.prepare(root, flags, text=text, issue_file=issue_file, gh=gh, yes=yes, json_out=json_out,
                           continue_=continue_, branch=branch, trajectory=trajectory)
    result = session.execute(plan)
    if json_out:
        sys.stdout.write(json.dumps(result.as_json(), ensure_ascii=False) + "\n")
        sys.stdout.flush()
    raise typer.Exit(0 if result.exit_reason == "final_answer" else 1)


@user_errors
def replay(
    trajectory: Annotated[Path, typer.Argument(help="A trajectory file (JSON lines) from `leaf fix`.")],
    workdir: Annotated[Optional[Path], typer.Option("--workdir", "-C", help="Copy this folder instead of the run's start state.")] = None,
) -> None:
    """Re-run a trajectory's tool calls on a fresh copy and say whether every observation matches."""
    from leaf_cli.cli.fix_replay import replay_trajectory

    mismatches = replay_trajectory(trajectory.expanduser(), workdir)
    raise typer.Exit(0 if mismatches == 0 else 1)


def _sigterm_as_interrupt() -> None:
    """SIGTERM ends the run like Ctrl-C: the tool is killed and the trajectory saved as `interrupted`."""

    def handler(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    if os.name == "posix":
        signal.signal(signal.SIGTERM, handler)

