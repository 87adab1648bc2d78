"""Making executors: one per configuration per process, so a Ray cluster is joined (or started) once."""

from __future__ import annotations

import threading

from leaf_cli.executor.base import Executor
from leaf_cli.executor.config import ExecutorConfig
from leaf_cli.executor.local import LocalExecutor

_made: dict[str, Executor] = {}
_lock = threading.Lock()


def make_executor(cfg: ExecutorConfig | None = None, job_name: str = "leaf") -> Executor:
    """The executor `cfg` describes (local when None). A Ray one needs the `scale` extra; `job_name` names
    the Ray job (the driver) when this call is the one that joins the cluster."""
    cfg = cfg or ExecutorConfig()
    if cfg.kind == "local":
        return LocalExecutor(cfg)
    key = cfg.model_dump_json()
    with _lock:
        if key not in _made:
            from leaf_cli.executor.ray_backend import RayExecutor

            _made[key] = RayExecutor(cfg, job_name)
        return _made[key]


def close_executors() -> None:
    """Leave every cluster this process joined (a `local` one is stopped)."""
    with _lock:
        for executor in _made.values():
            executor.close()
        _made.clear()
