"""Graded attempts per minute: 2 workers against 1 on the same real tasks (gold patches), as a ratio.

Tasks: toolz 1.0.0 from its PyPI sdist with injected bugs (the same recipe as tests/tasks), each graded
with its gold patch REPEATS times. The environment is built once before timing. Run:
    python bench/bench_eval.py [--repeats 3] [--sandbox bwrap]
With `--ray ADDRESS` (local starts a cluster of --workers CPUs) it compares instead the local thread pool
and the Ray executor at the same concurrency: attempts per minute side by side and Ray's overhead per
attempt, as a ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

BUGS = {
    "second": ("    next(seq)\n    return next(seq)\n", "    next(seq)\n    next(seq)\n    return next(seq)\n", "test_second"),
    "take": ("    return itertools.islice(seq, n)\n", "    return itertools.islice(seq, n + 1)\n", "test_take"),
    "drop": ("    return itertools.islice(seq, n, None)\n", "    return itertools.islice(seq, n + 1, None)\n", "test_drop"),
    "last": ("    return tail(1, seq)[0]\n", "    return tail(2, seq)[0]\n", "test_last"),
}
TESTS = "toolz/tests/test_itertoolz.py"


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def build_tasks(root: Path) -> Path:
    """Download the sdist, commit it, commit one bug per task on top; write tasks.jsonl."""
    from leaf_cli.tasks import Task, dump_tasks

    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q", "-d",
                    str(root), "toolz==1.0.0"], check=True)
    with tarfile.open(next(root.glob("toolz-*.tar.gz"))) as tar:
        tar.extractall(root)
    repo = root / "toolz-repo"
    shutil.copytree(root / "toolz-1.0.0", repo)  # a copy owned by us (the tarball's owners make git refuse)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "clean")
    clean = git(repo, "rev-parse", "HEAD").strip()
    others = [f"{TESTS}::test_{n}" for n in ("first", "nth", "groupby", "interleave")]
    tasks = []
    for name, (good, bad, test) in BUGS.items():
        git(repo, "checkout", "-q", "-B", name, clean)
        src = repo / "toolz" / "itertoolz.py"
        src.write_text(src.read_text().replace(good, bad, 1))
        git(repo, "commit", "-qam", name)
        bug = git(repo, "rev-parse", "HEAD").strip()
        tasks.append(Task(instance_id=f"toolz.{name}", repo=str(repo), base_commit=bug, problem_statement=name,
                          patch=git(repo, "diff", bug, clean), FAIL_TO_PASS=[f"{TESTS}::{test}"], PASS_TO_PASS=others,
                          version="1.0.0"))
    path = root / "tasks.jsonl"
    dump_tasks(tasks, path)
    return path


def timed(tasks, patches, out: Path, workers: int, sandbox, executor=None) -> tuple[float, dict]:  # noqa: ANN001
    from leaf_cli.tasks import EvalConfig, run_grading

    began = time.perf_counter()
    summary = run_grading(tasks, patches, EvalConfig(out=out, sandbox=sandbox, model_name="gold", workers=workers,
                                                     executor=executor))
    return time.perf_counter() - began, summary


def ray_mode(tasks, patches, root: Path, sandbox, address: str, workers: int) -> None:  # noqa: ANN001
    """The thread pool and the Ray executor, `workers` attempts at a time each (the cluster started outside
    the timing); the same gold gradings, so the difference is the executor's own cost."""
    from leaf_cli.executor import ExecutorConfig, close_executors, make_executor

    executor = make_executor(ExecutorConfig(kind="ray", address=address, num_cpus=workers), "bench_eval")
    n = sum(len(p) for p in patches.values())
    rates, seconds = {}, {}
    try:
        timed(tasks, {t.instance_id: patches[t.instance_id][:1] for t in tasks[:workers]}, root / "warm", workers,
              sandbox, executor)  # Ray's worker processes start (and import leaf) outside the timing
        for name, ex in (("local threads", None), ("ray", executor)):
            seconds[name], summary = timed(tasks, patches, root / name.replace(" ", "-"), workers, sandbox, ex)
            assert summary["resolved"] == n, json.dumps(summary)
            rates[name] = n / seconds[name] * 60
            print(f"{name:>13}: {n} graded attempts, {workers} at a time, in {seconds[name]:.1f} s = "
                  f"{rates[name]:.1f} per minute (sandbox {sandbox.name})")
    finally:
        close_executors()
    overhead = (seconds["ray"] - seconds["local threads"]) * workers / n
    print(f"ratio ray / local threads: {rates['ray'] / rates['local threads']:.2f}x attempts per minute; "
          f"Ray's overhead {overhead:+.2f} s per attempt ({seconds['ray'] / seconds['local threads']:.2f}x the "
          f"wall time)  (cpus: {os.cpu_count()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="Gold gradings per task.")
    parser.add_argument("--sandbox", default=None, help="subprocess, bwrap (default where installed), docker.")
    parser.add_argument("--ray", default=None, metavar="ADDRESS",
                        help="Compare the thread pool with the Ray executor (local, auto, ray://...) instead.")
    parser.add_argument("--workers", type=int, default=2, help="--ray mode: attempts at a time on both sides.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="leaf-bench-eval-") as tmp:
        root = Path(tmp)
        os.environ.setdefault("LEAF_CACHE_DIR", str(root / "cache"))
        from leaf_cli.tasks import get_env, load_tasks, make_sandbox

        tasks = load_tasks(build_tasks(root)).tasks
        sandbox = make_sandbox(args.sandbox)
        get_env(tasks[0])  # build the environment outside the timed runs
        patches = {t.instance_id: [t.patch] * args.repeats for t in tasks}
        if args.ray:
            ray_mode(tasks, patches, root, sandbox, args.ray, args.workers)
            return
        n = len(tasks) * args.repeats
        rows = {}
        for workers in (1, 2):
            seconds, summary = timed(tasks, patches, root / f"out{workers}", workers, sandbox)
            assert summary["resolved"] == n, json.dumps(summary)  # gold must resolve everything
            rows[workers] = n / seconds * 60
            print(f"workers={workers}: {n} graded attempts in {seconds:.1f} s = {rows[workers]:.1f} per minute "
                  f"(sandbox {sandbox.name})")
        print(f"ratio 2 workers / 1 worker: {rows[2] / rows[1]:.2f}x  (cpus: {os.cpu_count()})")


if __name__ == "__main__":
    main()
