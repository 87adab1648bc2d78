"""Start-up time of every main `--help` against a bare `python -c pass`, run side by side.

Target (DESIGN.md): leaf's wall time minus Python's own start-up ≤ 150 ms, for each command's help. Runs
alternate (python, then each command) so background load hits them alike; medians are reported, with the
ratio to python's start, which says more than milliseconds on a loaded machine.

    python bench/bench_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = (("leaf --help", ["--help"]), ("leaf fix --help", ["fix", "--help"]),
            ("leaf chat --help", ["chat", "--help"]), ("leaf eval run --help", ["eval", "run", "--help"]))
TARGET_MS = 150


def wall(argv: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def measure(runs: int) -> dict[str, float]:
    """Median wall milliseconds per command, `python -c pass` included."""
    argvs = {"python -c pass": [sys.executable, "-c", "pass"]}
    argvs.update({name: [sys.executable, "-m", "leaf_cli", *args] for name, args in COMMANDS})
    for argv in argvs.values():
        wall(argv)  # warm the file cache and bytecode
    times: dict[str, list[float]] = {name: [] for name in argvs}
    for _ in range(runs):
        for name, argv in argvs.items():
            times[name].append(wall(argv))
    return {name: statistics.median(values) * 1e3 for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    medians = measure(runs)
    bare = medians["python -c pass"]
    print(f"{'command':<24}{'median ms':>10}{'- python':>10}{'ratio':>8}   (median of {runs})")
    for name, ms in medians.items():
        over = ms - bare
        flag = "" if name.startswith("python") or over <= TARGET_MS else f"  over the {TARGET_MS} ms target"
        print(f"{name:<24}{ms:>10.0f}{over:>10.0f}{ms / bare:>7.2f}x{flag}")


if __name__ == "__main__":
    main()
