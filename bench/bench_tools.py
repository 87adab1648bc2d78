"""Benchmark leaf's tools against the Unix baselines on a 100,000-file git repository.

    python bench/bench_tools.py [--files 100000] [--read-files 1000] [--bash-mb 300] [--repeat 5]
    python bench/bench_tools.py --files 2000 --parts host [--host-calls 500]

Glob is timed against `git ls-files` (the index listing, the fastest way to list a repository), both for
the first Glob of an episode (cold) and a repeated one (warm: folder listings reused while unchanged); Read
against `cat` (one process for all N files, and one process per file as an agent's `cat` would be), and
Bash's peak memory with a 300 MB output against the same tool running a tiny command, each measured in a
fresh interpreter so ru_maxrss is not shared. `host` prices the file tools in `leaf fix`'s sandbox (the
bwrap tool host against the same calls in process). The tree is built once under bench/out/ (gitignored).
Leaf and its baseline run in turns, so background load falls on both alike. Targets (DESIGN.md): Glob and
Read <= 2x their baselines; memory flat whatever the output size. A cold Glob cannot meet 2x: reading
100,000 directory entries in Python costs about 3x git's index read on its own, which is why the
listings are reused within an episode.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
EXTS = [".py"] * 4 + [".txt", ".md", ".json", ".c", ".h", ".rs"]


def build_tree(files: int) -> Path:
    """A git repository of `files` small source files in 3 folder levels (built once, then reused)."""
    tree = OUT / f"tree{files}"
    if (tree / ".built").exists():
        return tree
    print(f"building {files} files under {tree} (once) ...", flush=True)
    subprocess.run(["rm", "-rf", str(tree)], check=True)
    rng = random.Random(0)
    per_dir = 100
    for i in range(files):
        d = i // per_dir
        folder = tree / f"pkg{d // 100:02d}" / f"mod{(d // 10) % 10}" / f"sub{d % 10}"
        if i % per_dir == 0:
            folder.mkdir(parents=True, exist_ok=True)
        body = "".join(f"line {j} of file {i}: {'x' * rng.randint(0, 60)}\n" for j in range(rng.randint(5, 60)))
        (folder / f"f{i}{EXTS[i % len(EXTS)]}").write_text(body)
    git = ["git", "-C", str(tree), "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "tree"], check=True)
    (tree / ".built").write_text("ok\n")
    return tree


def side_by_side(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median wall time of each run, taken in turns (a, b, c, a, b, c, ...) after one warm-up round, so that
    background load on a shared machine falls on every side alike. A run that returns a float has timed
    itself (to leave its setup out)."""
    for run in runs.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            own = run()
            times[name].append(own if isinstance(own, float) else time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def shell(argv: list[str], cwd: Path) -> Callable[[], object]:
    return lambda: subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, check=True)


def bench_glob(tree: Path, repeat: int) -> list[tuple[str, float, float]]:
    """Cold: the first Glob of an episode (a fresh Workspace, so every folder is read; the OS caches are
    warm, as they are for git). Warm: the same Workspace again, as an agent globs repeatedly (a stat per
    folder). Both against `git ls-files`, which reads the index and never looks at the folders."""
    from leaf_cli.tools import Workspace
    from leaf_cli.tools.args import CallArgs
    from leaf_cli.tools.glob import run_glob

    rows = []
    folders = random.Random(2).sample(sorted(p for p in tree.glob("*/*/*") if p.is_dir()), 10)
    for pattern, git_args in [("**/*.py", ["git", "ls-files", "--", "*.py"]), ("**/*", ["git", "ls-files"])]:
        args, ws, edited = CallArgs({"pattern": pattern}), Workspace(tree), Workspace(tree)

        def after_edits() -> float:
            """A warm Glob after a file was added to (or removed from) 10 folders: those are read again."""
            for folder in folders:
                new = folder / "bench-new.txt"
                if new.exists():
                    new.unlink()
                else:
                    new.write_text("x\n")
            start = time.perf_counter()
            run_glob(args, edited)
            return time.perf_counter() - start

        t = side_by_side({"cold": lambda: run_glob(args, Workspace(tree)), "git": shell(git_args, tree),
                          "warm": lambda: run_glob(args, ws), "edited": after_edits}, repeat)
        for folder in folders:
            (folder / "bench-new.txt").unlink(missing_ok=True)
        rows.append((f"Glob({pattern!r}) cold vs {' '.join(git_args)}", t["cold"], t["git"]))
        rows.append((f"Glob({pattern!r}) warm vs {' '.join(git_args)}", t["warm"], t["git"]))
        rows.append((f"Glob({pattern!r}) warm, 10 folders changed", t["edited"], t["git"]))
    return rows


def bench_read(tree: Path, n: int, repeat: int) -> list[tuple[str, float, float]]:
    """N Read calls (argument validation included, as the agent loop does it) against one `cat` of all N
    files (the floor: one process) and one `cat` per file (what an agent's Bash would do)."""
    from leaf_cli.tools import Workspace
    from leaf_cli.tools.args import CallArgs
    from leaf_cli.tools.read import run_read

    ws = Workspace(tree)
    listed = subprocess.run(["git", "ls-files"], cwd=tree, capture_output=True, text=True, check=True).stdout.split()
    paths = random.Random(1).sample(listed, n)
    leaf = lambda: [run_read(CallArgs({"file_path": p}), ws) for p in paths]  # noqa: E731
    t = side_by_side({"leaf": leaf, "cat": shell(["cat", *paths], tree)}, repeat)
    per_file = side_by_side({"leaf": leaf, "cat": lambda: [subprocess.run(["cat", p], cwd=tree, stdout=subprocess.DEVNULL)
                                                           for p in paths]}, max(1, repeat // 2))
    return [(f"Read x{n} vs one `cat` of all {n}", t["leaf"], t["cat"]),
            (f"Read x{n} vs `cat` per file", per_file["leaf"], per_file["cat"])]


def bench_host(tree: Path, n: int, repeat: int) -> list[tuple[str, float, float]]:
    """What running the file tools in the episode's sandbox costs (`leaf fix`'s default, issue 23): N Reads
    and N Writes through the bwrap tool host (warm: one host per episode, started before timing) against the
    same calls in this process on a confined workspace (`--sandbox none`: each path walked beneath the tree
    from a descriptor); and that walk against an unconfined plain open (eval's tools, inside their host).
    The host's start (bwrap plus a Python that imports leaf's tools) is paid once per episode, at the first
    file-tool call, and timed on its own."""
    import tempfile

    from leaf_cli.agent.sandbox import open_sandbox
    from leaf_cli.llm.messages import ToolCall
    from leaf_cli.tools import Workspace, run_tool_call

    listed = subprocess.run(["git", "ls-files"], cwd=tree, capture_output=True, text=True, check=True).stdout.split()
    paths = random.Random(3).sample(listed, n)
    reads = [ToolCall(id="r", name="Read", arguments={"file_path": p}) for p in paths]
    writes = [ToolCall(id="w", name="Write", arguments={"file_path": f"bench-host/{i % 50}/f{i}.txt",
                                                        "content": f"line {i}\n" * 20}) for i in range(n)]
    state = Path(tempfile.mkdtemp(prefix="leaf-bench-state-"))
    box = open_sandbox("bwrap", tree, tree, state)
    try:
        host = box.file_host(tree, str(Path.home()))
        hosted, here, free = Workspace(tree, file_host=host), Workspace(tree), Workspace(tree, confined=False)
        start = time.perf_counter()
        run_tool_call(reads[0], hosted)
        first = time.perf_counter() - start
        run = lambda ws, calls: lambda: [run_tool_call(c, ws) for c in calls]  # noqa: E731
        t = side_by_side({"host read": run(hosted, reads), "here read": run(here, reads), "free read": run(free, reads),
                          "host write": run(hosted, writes), "here write": run(here, writes)}, repeat)
        single = side_by_side({"host": run(hosted, reads[:1]), "here": run(here, reads[:1])}, repeat * 20)
    finally:
        box.close()
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(tree / "bench-host", ignore_errors=True)
    return [(f"Read x{n}: sandbox host vs in process (confined)", t["host read"], t["here read"]),
            (f"Write x{n}: sandbox host vs in process (confined)", t["host write"], t["here write"]),
            (f"Read x{n} in process: confined walk vs plain open", t["here read"], t["free read"]),
            ("host start + first Read vs one warm host Read", first, single["host"]),
            ("one Read: sandbox host vs in process", single["host"], single["here"])]


_PROBE = """
import resource, sys, time, tracemalloc
from leaf_cli.tools import Workspace
from leaf_cli.tools.args import CallArgs
from leaf_cli.tools.bash import run_bash
ws = Workspace(sys.argv[1])
run_bash(CallArgs({"command": "true"}), ws)  # warm: imports and first-call allocations on both sides
tracemalloc.start()
t = time.perf_counter()
out = run_bash(CallArgs({"command": sys.argv[2]}), ws)
seconds = time.perf_counter() - t
peak = tracemalloc.get_traced_memory()[1]
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, peak, len(out), seconds)
"""


def bench_bash_memory(tree: Path, megabytes: int) -> list[tuple[str, int, int, int, float]]:
    rows = []
    for label, command in [("tiny command (echo hi)", "echo hi"),
                           (f"{megabytes} MB of output", f"head -c {megabytes * 1_000_000} /dev/zero | tr '\\0' x")]:
        out = subprocess.run([sys.executable, "-c", _PROBE, str(tree), command], capture_output=True, text=True,
                             check=True).stdout.split()
        rows.append((label, int(out[0]), int(out[1]), int(out[2]), float(out[3])))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--read-files", type=int, default=1_000)
    parser.add_argument("--bash-mb", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--host-calls", type=int, default=500)
    parser.add_argument("--parts", nargs="+", choices=["glob", "read", "host", "bash"],
                        default=["glob", "read", "host", "bash"])
    opts = parser.parse_args()
    tree = build_tree(opts.files)

    timed = (bench_glob(tree, opts.repeat) if "glob" in opts.parts else []) + (
        bench_read(tree, opts.read_files, opts.repeat) if "read" in opts.parts else [])
    if timed:
        print(f"\n{'operation':58} {'leaf':>10} {'baseline':>10} {'ratio':>7}  target")
    for name, leaf, base in timed:
        print(f"{name:58} {leaf * 1000:8.1f}ms {base * 1000:8.1f}ms {leaf / base:6.2f}x  <= 2x")
    if "host" in opts.parts:
        print(f"\n{'file tools in the sandbox (cost, no target)':58} {'measured':>10} {'baseline':>10} {'ratio':>7}")
        for name, leaf, base in bench_host(tree, opts.host_calls, opts.repeat):
            print(f"{name:58} {leaf * 1000:8.2f}ms {base * 1000:8.2f}ms {leaf / base:6.2f}x")
    if "bash" not in opts.parts:
        return
    rows = bench_bash_memory(tree, opts.bash_mb)
    print(f"\n{'Bash run':30} {'peak RSS':>10} {'py heap peak':>13} {'obs chars':>10} {'wall':>8}")
    for label, rss_kb, heap, chars, seconds in rows:
        print(f"{label:30} {rss_kb / 1024:8.1f}MB {heap / 2**20:11.2f}MB {chars:10d} {seconds:7.2f}s")
    growth = (rows[1][1] - rows[0][1]) / 1024
    print(f"peak RSS growth for {opts.bash_mb} MB of output: {growth:+.1f} MB "
          f"({growth / opts.bash_mb * 100:.2f}% of the output size; target: flat)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT.parent))
    main()
