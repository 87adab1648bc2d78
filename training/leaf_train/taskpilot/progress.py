"""The live display of a synthesis run (rich, on stderr): one counter per stage and the latest event."""

from __future__ import annotations

import sys
import threading
from typing import Any

STAGES = ("generated", "validated", "executable", "calibrated", "accepted", "dropped")


class StageProgress:
    """A context manager whose `on_event(stage, detail)` is the pipeline's event callback."""

    def __init__(self, target: int, enabled: bool | None = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = Console(stderr=True)
        enabled = self.console.is_terminal if enabled is None else enabled
        self.progress = Progress(TextColumn("{task.description:>11}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[last]}"), TimeElapsedColumn(),
                                 console=self.console, disable=not enabled)
        self.ids = {s: self.progress.add_task(s, total=target if s == "accepted" else None, last="") for s in STAGES}
        self.enabled = enabled
        self._lock = threading.Lock()

    def __enter__(self) -> "StageProgress":
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()

    def on_event(self, stage: str, detail: str) -> None:
        with self._lock:
            if stage in self.ids:
                self.progress.update(self.ids[stage], advance=1, last=detail[:60])
            elif self.enabled:
                self.progress.console.print(f"[dim]{stage}:[/dim] {detail}")
            else:
                print(f"{stage}: {detail}", file=sys.stderr)
