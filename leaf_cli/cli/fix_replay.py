"""`leaf replay`: run a recorded trajectory's tool calls again on a fresh copy and compare observations."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from leaf_cli.errors import LeafError
from leaf_cli.ui.safe_text import markup_safe


def replay_script(messages: list[Any]) -> list[dict[str, Any]]:
    """The replay engine's turns, one per assistant message of the trajectory."""
    return [{"content": m.content, "reasoning_content": m.reasoning_content,
             "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls]}
            for m in messages if m.role == "assistant"]


def replay_trajectory(path: Path, workdir: Path | None, console: Console | None = None, sandbox: str | None = None) -> int:
    """Replay `path` and print each mismatch; return how many observations differ.

    The recorded calls are the agent's: they run under the same gate, sandbox and reaper as `leaf fix`.
    """
    from leaf_cli.agent import EpisodeHooks, Limits, run_episode
    from leaf_cli.agent.permissions import make_gate
    from leaf_cli.agent.reaper import Reaper
    from leaf_cli.agent.secrets import Redactor
    from leaf_cli.agent.trajectory import load
    from leaf_cli.cli.fix_session import agent_workspace, open_agent_sandbox
    from leaf_cli.config import load_settings
    from leaf_cli.llm.replay import ReplayEngine

    console = console or Console(stderr=True, highlight=False)
    if not path.is_file():
        raise LeafError(f"trajectory not found: {path}")
    try:
        recorded = load(path)
    except ValueError as exc:
        raise LeafError(str(exc)) from None
    script = replay_script(recorded.messages)
    first_user = next(i for i, m in enumerate(recorded.messages) if m.role == "user")
    import os

    settings, _origins = load_settings({"sandbox": sandbox})
    with tempfile.TemporaryDirectory(prefix="leaf-replay-") as tmp:
        copy = _fresh_copy(path, recorded.workdir, workdir, Path(tmp) / "work")
        engine = ReplayEngine(script, name=f"replay:{path}")
        system = recorded.messages[0].content if recorded.messages[0].role == "system" else None
        kwargs = {"system_prompt": system} if system is not None else {}
        box = open_agent_sandbox(settings, copy, copy)
        reaper = Reaper.for_sandbox(box)
        try:
            workspace = agent_workspace(settings, box, copy)
            again = run_episode(recorded.messages[first_user].content, engine, workspace,
                                limits=Limits.with_safeguards(max_turns=len(script) + 1),
                                hooks=EpisodeHooks(gate=make_gate("yolo", copy)), **kwargs)
        finally:
            reaper.stop()
            box.close()
    old = [m.content for m in recorded.messages if m.role == "tool"]
    redact = Redactor(os.environ, settings.pass_env)  # the recording holds markers where secrets were
    new = [redact.text(m.content) for m in again.messages if m.role == "tool"]
    mismatches = sum(1 for a, b in zip(old, new) if a != b) + abs(len(old) - len(new))
    for index, (a, b) in enumerate(zip(old, new), 1):
        if a != b:
            console.print(f"[red]observation {index} differs[/red]\n[dim]recorded:[/dim] {markup_safe(a[:300])}\n"
                          f"[dim]now:[/dim] {markup_safe(b[:300])}")
    verdict = "[green]all observations match[/green]" if mismatches == 0 else f"[red]{mismatches} differ[/red]"
    console.print(f"{len(script)} turns, {len(new)} tool calls replayed: {verdict}")
    return mismatches


def _fresh_copy(path: Path, recorded_workdir: str, workdir: Path | None, dest: Path) -> Path:
    """A copy of `workdir`, or of the run's repository put back to the run's start state."""
    if workdir is not None:
        if not workdir.is_dir():
            raise LeafError(f"--workdir {workdir} is not a directory")
        shutil.copytree(workdir, dest, symlinks=True)
        return dest
    run = _run_of(path)
    if run is None:
        raise LeafError(f"{path} is not from a leaf run with a checkpoint; pass --workdir to replay on a copy of a folder")
    from leaf_cli.repo.restore import restore

    shutil.copytree(run.top, dest, symlinks=True)
    restore(dest, Path(run.store), run.before)
    inner = Path(run.workdir).relative_to(run.top) if Path(run.workdir) != Path(run.top) else Path(".")
    return (dest / inner).resolve()


def _run_of(path: Path) -> Any:
    from leaf_cli.repo.runs import list_runs

    resolved = path.resolve()
    return next((r for r in list_runs() if r.trajectory and Path(r.trajectory).resolve() == resolved), None)
