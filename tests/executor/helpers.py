"""Job functions the Ray tests send to workers. They live in an importable module (not a test file, which
pytest imports under a private name) so a Ray worker can import them by name."""

from __future__ import annotations

from pathlib import Path


def task_facts(word: str, out: Path) -> dict:
    """What the worker running this job sees: its Ray task name, resources, process; and a file it wrote."""
    import os

    import ray

    ctx = ray.get_runtime_context()
    (out / "notes").mkdir()
    (out / "notes" / "word.txt").write_text(word)
    return {"name": ctx.get_task_name(), "resources": ctx.get_assigned_resources(), "pid": os.getpid(),
            "path": str(out / "notes" / "word.txt")}


def fails(message: str) -> None:
    raise ValueError(message)


class Keeper:
    """A pool worker holding one value (as an RL worker holds its weights)."""

    def __init__(self) -> None:
        self.value = None

    def set(self, value: object) -> None:
        self.value = value

    def pid(self) -> int:
        import os

        return os.getpid()

    def slow_value(self, seconds: float) -> object:
        import time

        time.sleep(seconds)
        return self.value
