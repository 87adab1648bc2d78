"""The Ray executor: each job a Ray task, each pool worker a Ray actor, on a cluster joined or started here.

The remote function runs the very function the local executor calls (the caller's attempt, validation or
suite run), on whatever node has the CPUs and memory the job reserves; its files go to a scratch folder
there and come back with its value. Retries are the driver's, not Ray's (`max_retries=0`): when a worker or
its node dies under a job, the driver sees it (`WorkerCrashedError`, `NodeDiedError`, ...), re-runs the job
up to `max_infra_retries` times and counts each re-run, which Ray's own retries would hide. A job whose
function raised is not retried: that exception is the job's result, as on the local executor. Only a
finished job is ever recorded, so a lost one can neither be written twice nor vanish.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from leaf_cli.errors import InfraError, LeafError
from leaf_cli.executor.artifacts import pack, unpack
from leaf_cli.executor.base import Done, Job, Needs
from leaf_cli.executor.config import ExecutorConfig, parse_ray_address

LOST = ("WorkerCrashedError", "NodeDiedError", "LocalRayletDiedError", "ObjectLostError", "OutOfMemoryError",
        "ActorDiedError", "ActorUnavailableError")
"""Ray's exceptions for work lost with its process or node (`ray.exceptions`): retried, never the job's fault."""

WAIT_S = 1.0
"""How long one `ray.wait` blocks: short, so Ctrl-C reaches the driver between waits."""


def _run_remote(fn: Callable[..., Any], args: tuple, with_outputs: bool) -> tuple[Any, dict[str, bytes], str]:
    """On the worker: the job's function, its files written under a scratch folder of this node."""
    if not with_outputs:
        return fn(*args), {}, ""
    scratch = Path(tempfile.mkdtemp(prefix="leaf-job-"))
    try:
        value = fn(*args, out=scratch)
        return value, pack(scratch), str(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class LeafWorker:
    """A Ray actor around what `make()` builds; methods are called by name."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.target = make()

    def call(self, method: str, *args: Any) -> Any:
        return getattr(self.target, method)(*args)


class RayWorker:
    """One pool actor. When its process or node dies, the next call starts a fresh actor from the same
    `make`, hands it the latest broadcast of each method (an RL worker: the current weights and version),
    and runs the call again: bounded by `max_infra_retries` per call and counted in `infra_retries`."""

    def __init__(self, name: str, make: Callable[[], Any], options: dict[str, Any], owner: "RayExecutor") -> None:
        self.name, self._make, self._options, self._owner = name, make, options, owner
        self._lock = threading.Lock()
        self._generation = 0
        self.latest: dict[str, tuple] = {}  # method -> object refs of its last broadcast
        self.handle = self._start()

    def call(self, method: str, *args: Any) -> Any:
        import ray

        for tries in range(self._owner.cfg.max_infra_retries + 1):
            generation, handle = self._generation, self.handle
            try:
                return ray.get(handle.call.options(name=f"{self.name}.{method}").remote(method, *args))
            except Exception as exc:  # noqa: BLE001 - only a lost actor is retried
                if type(exc).__name__ not in LOST or tries == self._owner.cfg.max_infra_retries:
                    raise
                self._restart(generation)
        raise AssertionError("unreachable: the last try returns or raises")

    def _start(self) -> Any:
        options = {**self._options, "name": f"{self.name}" + (f"-r{self._generation}" if self._generation else "")}
        handle = self._owner._actor.options(**options).remote(self._make)
        if self.latest:  # waited for: a threaded actor does not keep its calls in order
            import ray

            ray.get([handle.call.options(name=f"{self.name}.{m}").remote(m, *refs) for m, refs in self.latest.items()])
        return handle

    def _restart(self, seen: int) -> None:
        with self._lock:
            if self._generation != seen:  # another thread restarted it already
                return
            self._owner.infra_retries += 1
            self._generation += 1
            self.handle = self._start()


class RayExecutor:
    name = "ray"

    def __init__(self, cfg: ExecutorConfig, job_name: str = "leaf") -> None:
        try:
            import ray
        except ModuleNotFoundError:
            raise LeafError("--ray needs Ray: pip install 'leaf-agent[scale]' (or pip install ray)") from None
        self.cfg, self.infra_retries, self.owns = cfg, 0, False  # infra_retries: this process's total
        if not ray.is_initialized():  # a caller (a test, a notebook) may have joined a cluster already
            address = parse_ray_address(cfg.address)
            kwargs: dict[str, Any] = {}
            if address is None:
                kwargs = {"num_cpus": cfg.num_cpus, "object_store_memory": cfg.object_store_mb << 20,
                          "include_dashboard": cfg.dashboard}
            from ray.job_config import JobConfig

            try:
                ray.init(address=address, namespace=cfg.namespace, log_to_driver=False,
                         job_config=JobConfig(metadata={"job_name": job_name}), **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise InfraError(f"cannot reach the Ray cluster at {cfg.address!r}: {exc}", "ray") from None
            self.owns = True
        self._remote = ray.remote(_run_remote)
        self._actor = ray.remote(LeafWorker)

    def run(self, jobs: Iterable[Job], workers: int = 1) -> Iterator[Done]:
        """Submit every job (the cluster's resources bound how many run at once) and yield them as they end."""
        import ray

        pending: dict[Any, tuple[Job, int]] = {}
        try:
            for job in jobs:
                pending[self._submit(job, 0)] = (job, 0)
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_S)
                for ref in ready:
                    job, tries = pending.pop(ref)
                    try:
                        value, files, scratch = ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 - sorted below: lost work, or the job's own error
                        if type(exc).__name__ not in LOST:
                            raise
                        if tries < self.cfg.max_infra_retries:
                            self.infra_retries += 1
                            pending[self._submit(job, tries + 1)] = (job, tries + 1)
                        else:
                            yield Done(job=job, infra_retries=tries, lost=_one_line(exc))
                        continue
                    yield Done(job=job, value=self._land(job, value, files, scratch), infra_retries=tries)
        finally:  # finished, failed or interrupted: nothing of this run keeps running on the cluster
            for ref in pending:
                ray.cancel(ref, force=True)

    def call(self, job: Job) -> Any:
        running = self.run([job])
        done = next(running)
        running.close()
        if done.lost is not None:
            raise InfraError(f"{job.name}: its Ray worker was lost {done.infra_retries + 1} time(s): {done.lost}",
                             "worker_lost")
        return done.value

    def pool(self, make: Callable[[], Any], n: int, name: str, needs: Needs) -> list[RayWorker]:
        """`n` actors, each building its own `make()` on its node. Two calls may run at once in one actor
        (a weight update lands while a rollout samples, as with the local threads)."""
        tag = uuid.uuid4().hex[:6]  # a later pool of the same name (the next RL chunk) never meets a dying one
        options = {**self._resources(needs), "max_concurrency": 2, "max_restarts": 0}
        return [RayWorker(f"{name}-{tag}-{i}", make, options, self) for i in range(n)]

    def broadcast(self, workers: list[RayWorker], method: str, *args: Any) -> None:
        """Every worker runs `method(*args)`; the arguments are put in the object store once, and kept as the
        worker's latest of `method` for an actor that has to be started again."""
        import ray

        refs = tuple(ray.put(a) for a in args)
        for w in workers:
            w.latest[method] = refs
        with ThreadPoolExecutor(max_workers=max(1, len(workers)), thread_name_prefix="leaf-broadcast") as pool:
            list(pool.map(lambda w: w.call(method, *refs), workers))

    def release(self, workers: list[RayWorker]) -> None:
        import ray

        for w in workers:
            ray.kill(w.handle)

    def close(self) -> None:
        import ray

        if self.owns and ray.is_initialized():
            ray.shutdown()

    def _submit(self, job: Job, tries: int) -> Any:
        name = job.name if tries == 0 else f"{job.name} (infra retry {tries})"
        options = {**self._resources(job.needs), "name": name, "max_retries": 0, "retry_exceptions": False}
        return self._remote.options(**options).remote(job.fn, job.args, job.outputs is not None)

    def _resources(self, needs: Needs) -> dict[str, Any]:
        options: dict[str, Any] = {"num_cpus": needs.cpus}
        if needs.gpus:
            options["num_gpus"] = needs.gpus
        if needs.memory_mb:
            options["memory"] = needs.memory_mb << 20
        custom = dict(needs.resources)
        resource = self.cfg.sandbox_resources.get(needs.sandbox)
        if resource:
            custom[resource] = max(custom.get(resource, 0.0), 0.001)
        if custom:
            options["resources"] = custom
        return options

    def _land(self, job: Job, value: Any, files: dict[str, bytes], scratch: str) -> Any:
        """The job's files into the driver's output folder, and its value's paths pointed at them."""
        if job.outputs is None:
            return value
        unpack(files, job.outputs)
        return job.rebase(value, Path(scratch), job.outputs) if job.rebase is not None else value


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
