"""How much a checkpoint costs on a large repository, against `git status` and `git stash create`.

Builds a 20,000-file repository (one commit, loose objects as a fresh clone-less repo has them, then packed),
with staged, unstaged, untracked and deleted changes, and times side by side:
  baseline  `git status --porcelain`, `git stash create` (what a user or aider would pay anyway)
  leaf      record() into a fresh store (first run), record() again (warm store: later runs),
            current_tree() (the end-of-run snapshot that also yields the patch)
Usage: python bench/bench_checkpoint.py [--files N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from leaf_cli.repo.checkpoint import current_tree, record
from leaf_cli.repo.store import store_for

ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@b"}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, capture_output=True)


def build(repo: Path, files: int) -> None:
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in range(files):
        folder = repo / f"pkg{i % 200:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i:05d}.py").write_text(f"# module {i}\n" + "def f(x):\n    return x * %d\n" % i)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    for i in range(0, files, files // 200):  # 200 modified, a quarter of them staged
        path = repo / f"pkg{i % 200:03d}" / f"mod{i:05d}.py"
        path.write_text(path.read_text() + "# changed\n")
        if i % 4 == 0:
            git(repo, "add", str(path))
    for i in range(200):
        (repo / f"untracked_{i}.txt").write_text(f"new {i}\n")
    for i in range(1, files, files // 100):
        (repo / f"pkg{i % 200:03d}" / f"mod{i:05d}.py").unlink()


def timed(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(repo: Path, state: Path, repeat: int, label: str) -> None:
    status = timed(lambda: git(repo, "status", "--porcelain"), repeat)
    stash = timed(lambda: git(repo, "stash", "create"), repeat)
    counter = iter(range(10_000))
    first = timed(lambda: record(repo, store_for(state / f"cold{next(counter)}", repo), state / "meta"), 1)
    warm_store = store_for(state / "warm", repo)
    record(repo, warm_store, state / "meta")
    warm = timed(lambda: record(repo, warm_store, state / "meta"), repeat)
    snap = record(repo, warm_store, state / "meta")
    end = timed(lambda: current_tree(repo, warm_store, snap.worktree_tree), repeat)
    print(f"\n[{label}]")
    print(f"  git status --porcelain      {status * 1000:8.1f} ms   1.00x")
    print(f"  git stash create            {stash * 1000:8.1f} ms   {stash / status:5.2f}x status")
    for name, value in (("leaf record, first run", first), ("leaf record, later runs", warm),
                        ("leaf end-of-run snapshot", end)):
        print(f"  {name:<27} {value * 1000:8.1f} ms   {value / status:5.2f}x status   {value / stash:5.2f}x stash create")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="leaf-bench-") as tmp:
        repo, state = Path(tmp) / "repo", Path(tmp) / "state"
        t0 = time.perf_counter()
        build(repo, args.files)
        print(f"built {args.files:,} files with 200 modified (50 staged), 200 untracked, 100 deleted "
              f"in {time.perf_counter() - t0:.1f} s")
        measure(repo, state, args.repeat, "loose objects (as after `git add` + commit)")
        git(repo, "gc", "-q")
        measure(repo, state / "packed", args.repeat, "packed objects (after git gc)")


if __name__ == "__main__":
    main()
