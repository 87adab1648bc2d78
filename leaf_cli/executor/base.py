"""The executor protocol and the records it trades in."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Protocol

if TYPE_CHECKING:
    from leaf_cli.executor.config import ExecutorConfig


@dataclass(frozen=True)
class Needs:
    """What one job reserves where it runs. `memory_mb` None reserves nothing (the host decides)."""

    cpus: float = 1.0
    memory_mb: int | None = None
    sandbox: str = ""
    gpus: float = 0.0
    resources: tuple[tuple[str, float], ...] = ()
    """Custom Ray resources, as (name, amount) pairs (a tuple keeps Needs hashable)."""


@dataclass
class Job:
    """One unit of work: `fn(*args, out=FOLDER)` when `outputs` is set, else `fn(*args)`.

    `outputs` is the driver's folder the job writes files into (trajectories, logs). A remote job writes into
    a scratch folder on its node instead; its files are copied into `outputs` when it finishes, and
    `rebase(value, scratch, outputs)` rewrites the paths its value names."""

    name: str
    fn: Callable[..., Any]
    args: tuple = ()
    needs: Needs = field(default_factory=Needs)
    outputs: Path | None = None
    rebase: Callable[[Any, Path, Path], Any] | None = None


@dataclass
class Done:
    """A finished job: its value, the times it was re-run after a lost worker, and, when it could not be
    finished within the retry budget, why (`value` is then None)."""

    job: Job
    value: Any = None
    infra_retries: int = 0
    lost: str | None = None


class Worker(Protocol):
    """A long-lived worker holding state (an RL rollout engine): call its methods by name."""

    name: str

    def call(self, method: str, *args: Any) -> Any:
        """Run `method(*args)` on the worker and wait for its value."""
        ...


class Executor(Protocol):
    name: str
    cfg: "ExecutorConfig"

    def run(self, jobs: Iterable[Job], workers: int = 1) -> Iterator[Done]:
        """Run the jobs (`workers` at a time where the executor bounds concurrency itself) and yield each as it
        finishes. An exception the job's function raises propagates, as it would on the calling thread."""
        ...

    def call(self, job: Job) -> Any:
        """Run one job and return its value (TaskPilot's validations run this way, from its own threads)."""
        ...

    def pool(self, make: Callable[[], Any], n: int, name: str, needs: Needs) -> list[Worker]:
        """`n` workers, each holding what `make()` builds (local: one object shared by `n` handles)."""
        ...

    def broadcast(self, workers: list[Worker], method: str, *args: Any) -> None:
        """Call `method(*args)` once on every distinct worker and wait for all."""
        ...

    def release(self, workers: list[Worker]) -> None:
        """Stop the workers `pool` made."""
        ...

    def close(self) -> None:
        ...
