"""The live view of a run on stderr: streamed reasoning and text, one line per tool call, a spinner while a
tool runs, token counts, tokens/s, context fill and elapsed time. stdout stays clean for --json.

It only renders `leaf_cli.agent.events`; it decides nothing.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.status import Status
from rich.text import Text

from leaf_cli.agent import events as ev
from leaf_cli.ui.safe_text import plain

_MAIN_ARG = {"read": "file_path", "write": "file_path", "edit": "file_path", "glob": "pattern", "bash": "command"}


def tool_line(name: str, arguments: dict[str, Any], width: int = 100) -> str:
    """`Bash(pytest -q)`: the tool and its main argument on one line."""
    key = _MAIN_ARG.get(name.lower())
    value = arguments.get(key) if key else None
    if value is None and arguments:
        value = next(iter(arguments.values()))
    shown = " ".join(plain(str(value)).split()) if value is not None else ""
    if len(shown) > width:
        shown = shown[: width - 1] + "…"
    return f"{plain(name)}({shown})"


class LiveView:
    """Call with each event. `quiet` hides reasoning; `context_limit` gives the fill percentage."""

    def __init__(self, console: Console | None = None, *, quiet: bool = False, context_limit: int = 0) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.quiet, self.context_limit = quiet, context_limit
        self.started = time.monotonic()
        self.prompt_tokens = self.cached_tokens = self.completion_tokens = 0
        self.last_context = 0
        self._status: Status | None = None
        self._streaming: str | None = None

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.TextDelta):
            self._delta(event.kind, event.text)
        elif isinstance(event, ev.TurnFinished):
            self._end_stream()
            self._turn(event.index, event.turn)
        elif isinstance(event, ev.ToolStarted):
            self._end_stream()
            self._status = self.console.status(Text(tool_line(event.call.name, event.call.arguments), style="cyan"))
            self._status.start()
        elif isinstance(event, ev.ToolFinished):
            self.pause()
            mark, style = ("✗", "red") if event.result.is_error else ("✓", "green")
            first = plain(event.result.text.splitlines()[0]) if event.result.text else ""
            line = Text(f"{mark} ", style=style)
            line.append(tool_line(event.call.name, event.call.arguments), style="bold")
            line.append(f"  {first[:80]}  {event.seconds:.1f}s", style="dim")
            self.console.print(line)
        elif isinstance(event, ev.FormatErrorNotice):
            self._end_stream()
            self.console.print(Text(f"! unparseable tool call: {plain(event.detail)}", style="yellow"))

    def pause(self) -> None:
        """Stop the spinner (before a permission prompt, or when the tool is done)."""
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _delta(self, kind: str, text: str) -> None:
        if kind == "reasoning" and self.quiet:
            return
        if self._streaming != kind:
            self._end_stream()
            self._streaming = kind
        self.console.print(Text(plain(text), style="dim italic" if kind == "reasoning" else ""), end="")

    def _end_stream(self) -> None:
        if self._streaming is not None:
            self.console.print()
            self._streaming = None

    def _turn(self, index: int, turn: Any) -> None:
        usage = turn.usage  # a count the server did not give is None: shown as `?`, never added as 0
        self.prompt_tokens = _add(self.prompt_tokens, usage.prompt_tokens)
        self.cached_tokens += usage.cached_tokens
        self.completion_tokens = _add(self.completion_tokens, usage.completion_tokens)
        self.last_context = usage.total
        self.console.print(Text(self.status_line(index + 1, usage.completion_tokens, turn.seconds), style="dim"))

    def status_line(self, turns: int, new_tokens: int | None, seconds: float) -> str:
        rate = f"{new_tokens / seconds:.1f} tok/s" if seconds > 0 and new_tokens is not None else "– tok/s"
        fill = (f" · ctx {100 * self.last_context / self.context_limit:.0f}%"
                if self.context_limit and self.last_context is not None else "")
        return (f"turn {turns} · {_count(self.prompt_tokens)} in ({self.cached_tokens:,} cached) · "
                f"{_count(self.completion_tokens)} out · {rate}{fill} · {_clock(time.monotonic() - self.started)}")


def _add(total: int | None, value: int | None) -> int | None:
    return None if total is None or value is None else total + value


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def summary(console: Console, *, turns: int, usage: dict[str, Any], seconds: float, exit_reason: str,
            files_changed: int, insertions: int, deletions: int, run_id: str) -> None:
    """The closing lines of a run."""
    style = "green" if exit_reason == "final_answer" else "yellow"
    console.print(Text(f"● {exit_reason}", style=f"bold {style}"), Text(
        f" · {turns} turns · {_count(usage.get('prompt_tokens', 0))} in / {_count(usage.get('completion_tokens', 0))} out tokens"
        f" · {_clock(seconds)} · {files_changed} files changed (+{insertions} −{deletions}) · run {run_id}",
        style="dim"))


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"
