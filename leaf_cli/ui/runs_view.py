"""`leaf runs show RUN`: one run's record, then the conversation its trajectory holds."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from leaf_cli.ui.live import tool_line
from leaf_cli.ui.safe_text import plain

_ROLE_STYLE = {"system": "dim", "user": "bold green", "assistant": "bold cyan", "tool": "yellow"}


def load_trajectory(record: Any) -> Any:
    """The run's trajectory, or None when it is gone or unreadable (the record alone is still shown)."""
    from leaf_cli.agent.trajectory import load

    path = Path(record.trajectory) if record.trajectory else None
    if path is None or not path.is_file():
        return None
    try:
        return load(path)
    except (OSError, ValueError):
        return None


def show_header(console: Console, record: Any, changes: str) -> None:
    started = dt.datetime.fromtimestamp(record.started_at).strftime("%Y-%m-%d %H:%M:%S")
    fields = [("run", record.run_id), ("state", record.status), ("task", record.title), ("model", record.model or "-"),
              ("started", started), ("exit", record.exit_reason or "-"), ("changes", changes),
              ("repository", record.top)]
    if record.commit:
        fields.append(("commit", record.commit[:10]))
    if record.branch_name:
        fields.append(("branch", record.branch_name))
    if record.continued_from:
        fields.append(("continues", record.continued_from))
    for name, value in fields:
        line = Text(f"{name:11}", style="bold")
        line.append(plain(str(value)))
        console.print(line, soft_wrap=True)
    console.print()


def show_conversation(console: Console, trajectory: Any) -> None:
    if trajectory is None:
        console.print(Text("No conversation: the run's trajectory is missing.", style="dim"))
        return
    say = lambda text: console.print(text, soft_wrap=not console.is_terminal)  # noqa: E731 - piped: never cut
    say(Text("Conversation", style="bold underline"))
    for message in trajectory.messages:
        say(Text(message.role, style=_ROLE_STYLE.get(message.role, "")))
        if message.reasoning_content:
            say(Text(plain(message.reasoning_content), style="dim italic"))
        if message.content:
            say(Text(plain(message.content)))
        for call in message.tool_calls:
            args = call.arguments if isinstance(call.arguments, dict) else {"arguments": json.dumps(call.arguments)}
            say(Text("→ " + tool_line(call.name, args, 100), style="cyan"))
