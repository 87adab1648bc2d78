"""The live view of a run on stderr: streamed reasoning and text, one line per tool call, a spinner while a
tool runs, token counts, prompt and generation rates, context fill and elapsed time. stdout stays clean for
--json.

On a terminal (and not --quiet) each turn has a live line under the streamed text: "waiting for the model",
then "reading the prompt · done/total tokens" while the engine evaluates it, then the generation rate as the
reply streams. Elsewhere the view prints only finished lines, so logs stay plain.

It only renders `leaf_cli.agent.events`; it decides nothing.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Iterator

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.status import Status
from rich.text import Text

from leaf_cli.agent import events as ev
from leaf_cli.ui.rates import TurnClock, show_rate
from leaf_cli.ui.safe_text import plain

_MAIN_ARG = {"read": "file_path", "write": "file_path", "edit": "file_path", "glob": "pattern", "bash": "command"}
_PATH_ARGS = ("file_path", "pattern", "path")
_REFRESH = 8  # frames a second: enough for a spinner, cheap next to a model's decode


def tool_line(name: str, arguments: dict[str, Any], width: int = 100) -> str:
    """`Bash(pytest -q)`: the tool and its main argument on one line, shortened where it cuts least."""
    key = _MAIN_ARG.get(name.lower())
    value = arguments.get(key) if key else None
    if value is None and arguments:
        key, value = next(iter(arguments.items()))
    shown = " ".join(plain(str(value)).split()) if value is not None else ""
    return f"{plain(name)}({shorten(shown, width, path=key in _PATH_ARGS)})"


def shorten(text: str, width: int, *, path: bool = False) -> str:
    """`text` in at most `width` characters. A path keeps its end (the file name) from a `/` on; other text
    is cut at a space when one falls in the last third, so no word is cut in half."""
    if len(text) <= width:
        return text
    if path:
        tail = text[-(width - 1):]
        cut = tail.find("/")
        return "…" + (tail[cut:] if 0 <= cut < len(tail) - 1 else tail)
    head = text[:width - 1]
    cut = head.rfind(" ")
    return (head[:cut] if cut >= (width * 2) // 3 else head).rstrip() + "…"


@contextlib.contextmanager
def phase(console: Console, text: str, *, show: bool = True) -> Iterator[None]:
    """A transient spinner for a step with no progress of its own (loading the model); nothing when not `show`."""
    live = spin(console, text) if show and console.is_terminal else None
    try:
        yield
    finally:
        if live is not None:
            live.stop()


def spin(console: Console, text: str) -> Live:
    """A transient spinner, drawn at once (rich's status waits for its first tick, after a fast step ends)."""
    live = Live(Spinner("dots", Text(f"{text}…", style="dim")), console=console, transient=True,
                refresh_per_second=_REFRESH)
    live.start(refresh=True)
    return live


class LiveView:
    """Call with each event. `quiet` hides reasoning and the live line; `context_limit` gives the fill
    percentage; `progress` (default: on a terminal and not quiet) turns the live line on or off."""

    def __init__(self, console: Console | None = None, *, quiet: bool = False, context_limit: int = 0,
                 progress: bool | None = None) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.quiet, self.context_limit = quiet, context_limit
        self.progress = (not quiet and self.console.is_terminal) if progress is None else progress
        self.started = time.monotonic()
        self.prompt_tokens = self.cached_tokens = self.completion_tokens = 0
        self.last_context = 0
        self.clock = TurnClock(self.started)
        self._status: Status | None = None
        self._streaming: str | None = None
        self._live: Live | None = None
        self._spinner = Spinner("dots", "")
        self._partial = ""  # the streamed line not yet ended (shown in the live area, printed once it ends)

    def __call__(self, event: ev.Event) -> None:
        now = time.monotonic()
        if isinstance(event, ev.TurnStarted):
            self.clock = TurnClock(now)
            self._show("waiting for the model")
        elif isinstance(event, ev.PrefillProgress):
            self.clock.prefill(event.done, event.total, now)
            self._show(self._reading(event, now), draw=True)  # one report per chunk: draw each at once
        elif isinstance(event, ev.TextDelta):
            self.clock.delta(now)
            self._delta(event.kind, event.text)
        elif isinstance(event, ev.TurnFinished):
            self._end_stream()
            self._turn(event.index, event.turn, now)
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
            line.append(f"  {shorten(first, 80)}  {event.seconds:.1f}s", style="dim")
            self.console.print(line)
        elif isinstance(event, ev.FormatErrorNotice):
            self._end_stream()
            self.console.print(Text(f"! unparseable tool call: {plain(event.detail)}", style="yellow"))

    def pause(self) -> None:
        """Stop the spinners (before a permission prompt, or when the tool is done)."""
        self._end_stream()
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _reading(self, event: ev.PrefillProgress, now: float) -> str:
        if event.done >= event.total:
            return f"read the prompt ({event.total:,} tokens) · generating"
        elapsed = now - (self.clock.prefill_started or now)
        rate = event.done / elapsed if event.done and elapsed > 0 else None  # none until a chunk is done
        return f"reading the prompt · {event.done:,}/{event.total:,} tokens · {show_rate(rate)} tok/s"

    def _show(self, text: str, *, draw: bool = False) -> None:
        """Put `text` on the live line (starting it if needed; `draw`: now, not at the next frame); nothing
        when the live line is off."""
        if not self.progress:
            return
        self._spinner.update(text=Text(text, style="dim"))
        if self._live is None:
            self._live = Live(console=self.console, transient=True, refresh_per_second=_REFRESH,
                              get_renderable=self._renderable, redirect_stdout=False, redirect_stderr=False)
            self._live.start(refresh=True)
        elif draw:
            self._live.refresh()

    def _renderable(self) -> RenderableType:
        partial, style = self._partial, self._style()  # read once: the refresh thread calls this
        return Group(Text(partial, style=style), self._spinner) if partial else self._spinner

    def _style(self) -> str:
        return "dim italic" if self._streaming == "reasoning" else ""

    def _delta(self, kind: str, text: str) -> None:
        if kind == "reasoning" and self.quiet:
            return
        if self._streaming != kind:
            self._end_line()
            self._streaming = kind
        if not self.progress:
            self.console.print(Text(plain(text), style=self._style()), end="")
            return
        lines = (self._partial + plain(text)).split("\n")
        for line in lines[:-1]:
            self.console.print(Text(line, style=self._style()))  # above the live line
        self._partial = lines[-1]
        now = time.monotonic()
        self._show(f"generating · {self.clock.streamed:,} tokens · "
                   f"{show_rate(self.clock.generation_rate(self.clock.streamed, now))} tok/s · "
                   f"prompt {show_rate(self.clock.prompt_rate())} tok/s")

    def _end_line(self) -> None:
        """End the streamed line in progress, if any."""
        if self._streaming is None:
            return
        if self.progress:
            if self._partial:
                self.console.print(Text(self._partial, style=self._style()))
            self._partial = ""
        else:
            self.console.print()

    def _end_stream(self) -> None:
        self._end_line()
        self._streaming = None
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _turn(self, index: int, turn: Any, now: float) -> None:
        usage = turn.usage  # a count the server did not give is None: shown as `?`, never added as 0
        self.prompt_tokens = _add(self.prompt_tokens, usage.prompt_tokens)
        self.cached_tokens += usage.cached_tokens
        self.completion_tokens = _add(self.completion_tokens, usage.completion_tokens)
        self.last_context = usage.total
        evaluated = usage.prompt_tokens - usage.cached_tokens if usage.prompt_tokens is not None else None
        prompt_rate = self.clock.prompt_rate(evaluated)
        gen_rate = self.clock.generation_rate(usage.completion_tokens, now)
        self.console.print(Text(self.status_line(index + 1, prompt_rate, gen_rate), style="dim"), soft_wrap=True)

    def status_line(self, turns: int, prompt_rate: float | None, gen_rate: float | None) -> str:
        fill = (f" · ctx {100 * self.last_context / self.context_limit:.0f}%"
                if self.context_limit and self.last_context is not None else "")
        return (f"turn {turns} · {_count(self.prompt_tokens)} in ({self.cached_tokens:,} cached) · "
                f"{_count(self.completion_tokens)} out · prompt {show_rate(prompt_rate)} tok/s · "
                f"gen {show_rate(gen_rate)} tok/s{fill} · {_clock(time.monotonic() - self.started)}")


def _add(total: int | None, value: int | None) -> int | None:
    return None if total is None or value is None else total + value


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def summary(console: Console, *, turns: int, usage: dict[str, Any], seconds: float, exit_reason: str,
            files_changed: int, insertions: int, deletions: int, run_id: str) -> None:
    """The closing line of a run: one line whatever the width (a log or pipe gets no wrapping at 80)."""
    style = "green" if exit_reason == "final_answer" else "yellow"
    console.print(Text(f"● {exit_reason}", style=f"bold {style}"), Text(
        f" · {turns} {'turn' if turns == 1 else 'turns'} · {_count(usage.get('prompt_tokens', 0))} in / {_count(usage.get('completion_tokens', 0))} out tokens"
        f" · {_clock(seconds)} · {files_changed} {'file' if files_changed == 1 else 'files'} changed (+{insertions} −{deletions}) · run {run_id}",
        style="dim"), soft_wrap=True)


def memory_note(console: Console, name: str | None) -> None:
    """Say once, dimmed, that the repository's instructions file went into the task."""
    if name:
        console.print(Text(f"using {name} from the repository root (its instructions are part of the task)",
                           style="dim"), soft_wrap=True)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"
