"""The `docker run` options an imported task asks for: its network per phase and its cpu / memory limits.

Harbor tasks record the network each phase gets (`agent`, `verifier`: public or no-network) and the
environment's `cpus` and `memory_mb`; every other image task (SWE-bench, Pro, PatchEval) runs without
network and without limits, as their harnesses run them.
"""

from __future__ import annotations

from typing import Literal

from leaf_cli.tasks.format.task import Task

Phase = Literal["agent", "verifier"]


def harbor_settings(task: Task) -> dict:
    return dict((task.model_extra or {}).get("harbor") or {})


def has_network(task: Task, phase: Phase) -> bool:
    """Whether `phase` runs with the network: a Harbor task's recorded mode; never for the others."""
    settings = harbor_settings(task)
    network = settings.get("network")
    if isinstance(network, dict):
        return network.get(phase) == "public"
    return bool(settings.get("allow_internet"))  # task files written before the per-phase field


def run_args(task: Task, phase: Phase) -> list[str]:
    """`--network none` unless the phase has the network, then `--cpus` / `--memory` when the task sets them."""
    settings = harbor_settings(task)
    args = [] if has_network(task, phase) else ["--network", "none"]
    if settings.get("cpus"):
        args += ["--cpus", str(settings["cpus"])]
    if settings.get("memory_mb"):
        args += ["--memory", f"{int(settings['memory_mb'])}m"]
    return args
