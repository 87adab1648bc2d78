"""The local executor: threads in this process, today's behaviour and the default.

Attempts spend their time in subprocesses and in engines that release the GIL, so threads are enough on
one machine, and nothing needs pickling (engine factories are closures)."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Any, Callable, Iterable, Iterator

from leaf_cli.executor.base import Done, Job, Needs
from leaf_cli.executor.config import ExecutorConfig


def call_job(job: Job) -> Any:
    """Run a job's function where the caller is, its files straight into `outputs`."""
    return job.fn(*job.args, out=job.outputs) if job.outputs is not None else job.fn(*job.args)


class LocalWorker:
    def __init__(self, name: str, target: Any) -> None:
        self.name, self.target = name, target

    def call(self, method: str, *args: Any) -> Any:
        return getattr(self.target, method)(*args)


class LocalExecutor:
    name = "local"

    def __init__(self, cfg: ExecutorConfig | None = None) -> None:
        self.cfg = cfg or ExecutorConfig()

    def run(self, jobs: Iterable[Job], workers: int = 1) -> Iterator[Done]:
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="leaf-job") as pool:
            futures: dict[Future, Job] = {pool.submit(call_job, job): job for job in jobs}
            try:
                for future in as_completed(futures):
                    yield Done(job=futures[future], value=future.result())
            finally:  # the caller stopped early (Ctrl-C, an error): start nothing more
                for f in futures:
                    f.cancel()

    def call(self, job: Job) -> Any:
        return call_job(job)

    def pool(self, make: Callable[[], Any], n: int, name: str, needs: Needs) -> list[LocalWorker]:
        target = make()
        return [LocalWorker(f"{name}-{i}", target) for i in range(n)]

    def broadcast(self, workers: list[LocalWorker], method: str, *args: Any) -> None:
        for target in {id(w.target): w.target for w in workers}.values():
            getattr(target, method)(*args)

    def release(self, workers: list[LocalWorker]) -> None:
        pass

    def close(self) -> None:
        pass
