"""Graded attempts per minute: 2 workers against 1 on the same real tasks (gold patches), as a ratio.

Tasks: toolz 1.0.0 from its PyPI sdist with injected bugs (the same recipe as tests/tasks), each graded
with its gold patch REPEATS times. The environment is built once before timing. Run:
    python bench/bench_eval.py [--repeats 3] [--sandbox bwrap]
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


def timed(tasks, patches, out: Path, workers: int, sandbox) -> tuple[float, dict]:  # noqa: ANN001
    from leaf_cli.tasks import EvalConfig, run_grading

    began = time.perf_counter()
    summary = run_grading(tasks, patches, EvalConfig(out=out, sandbox=sandbox, model_name="gold", workers=workers))
    return time.perf_counter() - began, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="Gold gradings per task.")
    parser.add_argument("--sandbox", default=None, help="subprocess, bwrap (default where installed), docker.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="leaf-bench-eval-") as tmp:
        root = Path(tmp)
        os.environ.setdefault("LEAF_CACHE_DIR", str(root / "cache"))
        from leaf_cli.tasks import get_env, load_tasks, make_sandbox

        tasks = load_tasks(build_tasks(root)).tasks
        sandbox = make_sandbox(args.sandbox)
        get_env(tasks[0])  # build the environment outside the timed runs
        patches = {t.instance_id: [t.patch] * args.repeats for t in tasks}
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
