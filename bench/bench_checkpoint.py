"""What a checkpoint and an undo cost on a large repository, against `git status`, with the store
hard-linking objects (before: the store shared inodes with the repository) and copying them (now).

Builds a 20,000-file repository (one commit, loose objects as after `git add` + commit, then packed), with
staged, unstaged, untracked and deleted changes, and times side by side:
  baseline  `git status --porcelain`
  leaf      record() into a fresh store (first run), record() again (warm store: later runs),
            current_tree() (the end-of-run snapshot that also yields the patch), restore() after an agent
            rewrote 200 files and added 200 (undo)
The "link" rows replace the store's copy with the hard link it used before, everything else equal.
Usage: python bench/bench_checkpoint.py [--files N] [--repeat R] [--repo PATH (a real repository, copied)]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from leaf_cli.repo import store as store_module
from leaf_cli.repo.checkpoint import current_tree, record
from leaf_cli.repo.restore import restore
from leaf_cli.repo.store import store_for

ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@b"}
_COPY = store_module._copy_file


def _link_file(src: Path, dst: Path) -> int:
    """The store's old way: a hard link (the same inode as the repository's object file)."""
    try:
        os.link(src, dst)
    except (FileExistsError, FileNotFoundError):
        return 0
    return 1


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
    dirty(repo)


def dirty(repo: Path) -> None:
    tracked = sorted(p for p in repo.rglob("*.py") if ".git" not in p.parts)
    step = max(1, len(tracked) // 200)
    for n, path in enumerate(tracked[::step][:200]):  # 200 modified, a quarter of them staged
        path.write_text(path.read_text() + "# changed\n")
        if n % 4 == 0:
            git(repo, "add", str(path))
    for i in range(200):
        (repo / f"untracked_{i}.txt").write_text(f"new {i}\n")
    for path in tracked[1::max(1, len(tracked) // 100)][:100]:
        path.unlink()


def agent(repo: Path) -> None:
    """What an agent run does before the undo: 200 files rewritten, 200 new."""
    for n, path in enumerate(sorted(p for p in repo.rglob("*.py") if ".git" not in p.parts)[:200]):
        path.write_text(f"# rewritten by the agent {n}\n")
    for i in range(200):
        (repo / f"agent_{i}.txt").write_text("agent\n")


def timed(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(repo: Path, state: Path, repeat: int, how: str) -> dict[str, float]:
    store_module._copy_file = _link_file if how == "link" else _COPY
    try:
        counter = iter(range(10_000))
        first = timed(lambda: record(repo, store_for(state / f"cold{next(counter)}", repo), state / "meta"), 1)
        warm_store = store_for(state / "warm", repo)
        record(repo, warm_store, state / "meta")
        warm = timed(lambda: record(repo, warm_store, state / "meta"), repeat)
        snap = record(repo, warm_store, state / "meta")
        end = timed(lambda: current_tree(repo, warm_store, snap), repeat)
        undo_times = []
        for _ in range(repeat):
            agent(repo)
            start = time.perf_counter()
            restore(repo, warm_store, snap)
            undo_times.append(time.perf_counter() - start)
        return {"record, first run": first, "record, later runs": warm, "end-of-run snapshot": end,
                "undo (restore)": statistics.median(undo_times)}
    finally:
        store_module._copy_file = _COPY


def report(repo: Path, state: Path, repeat: int, label: str) -> None:
    status = timed(lambda: git(repo, "status", "--porcelain"), repeat)
    rows = {how: measure(repo, state / how, repeat, how) for how in ("link", "copy")}
    print(f"\n[{label}]  git status --porcelain {status * 1000:.1f} ms = 1.00x")
    print(f"  {'':<22} {'link (before)':>22} {'copy (now)':>22} {'copy/link':>10}")
    for name in rows["copy"]:
        link, copy = rows["link"][name], rows["copy"][name]
        print(f"  {name:<22} {link * 1000:9.1f} ms {link / status:6.2f}x  {copy * 1000:9.1f} ms {copy / status:6.2f}x"
              f"  {copy / link:8.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--repo", type=Path, help="also measure a copy of this real repository")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="leaf-bench-") as tmp:
        repo, state = Path(tmp) / "repo", Path(tmp) / "state"
        t0 = time.perf_counter()
        build(repo, args.files)
        print(f"built {args.files:,} files with 200 modified (50 staged), 200 untracked, 100 deleted "
              f"in {time.perf_counter() - t0:.1f} s")
        report(repo, state / "loose", args.repeat, "loose objects (as after `git add` + commit)")
        git(repo, "gc", "-q")
        report(repo, state / "packed", args.repeat, "packed objects (after git gc)")
        if args.repo is not None:
            real = Path(tmp) / "real"
            shutil.copytree(args.repo, real, symlinks=True)
            dirty(real)
            report(real, state / "real", args.repeat, f"real repository {args.repo.name} "
                   f"({sum(1 for _ in real.rglob('*') if '.git' not in _.parts):,} paths)")


if __name__ == "__main__":
    main()
