"""What one attempt reserves on the cluster, read from its task.

Harbor tasks name their container's `cpus` and `memory_mb` (task.toml's [environment]); image tasks
without them (SWE-bench, Pro, PatchEval) get the executor's `image_memory_mb` and one CPU each (SWE-bench's
harness runs one container per instance with no limits; a reservation keeps a node from taking more
containers than its memory holds); local snapshot tasks reserve one CPU and leave memory to the host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from leaf_cli.executor.base import Needs
from leaf_cli.executor.config import ExecutorConfig

if TYPE_CHECKING:
    from leaf_cli.tasks.format.task import Task


def needs_of(task: "Task", sandbox: str, cfg: ExecutorConfig | None = None) -> Needs:
    from leaf_cli.tasks.envs.image import is_image_task

    cfg = cfg or ExecutorConfig()
    harbor = (task.model_extra or {}).get("harbor") or {}
    cpus = _positive(harbor.get("cpus")) or cfg.cpus_per_job
    memory = _positive(harbor.get("memory_mb"))
    if memory is None and is_image_task(task) and cfg.image_memory_mb:
        memory = cfg.image_memory_mb
    return Needs(cpus=float(cpus), memory_mb=int(memory) if memory else None, sandbox=sandbox)


def _positive(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None
