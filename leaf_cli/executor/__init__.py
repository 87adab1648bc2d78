"""Where attempts, validations and rollouts run: threads in this process (the default) or a Ray cluster.

One seam for every caller (`leaf eval run`, TaskPilot, the RL rollout scheduler): a caller hands over
`Job`s (the same function the local path runs, its arguments, the resources it needs) and gets each back
as it finishes; long-lived workers (RL rollout engines) are a `pool`. Ray is imported only by
`ray_backend.py`, and only when a Ray executor is asked for, so `leaf --help` and local runs never load it.
"""

from __future__ import annotations

from leaf_cli.executor.base import Done, Executor, Job, Needs, Worker
from leaf_cli.executor.config import ExecutorConfig, parse_ray_address
from leaf_cli.executor.factory import close_executors, make_executor
from leaf_cli.executor.local import LocalExecutor

__all__ = ["Done", "Executor", "ExecutorConfig", "Job", "LocalExecutor", "Needs", "Worker", "close_executors",
           "make_executor", "parse_ray_address"]
