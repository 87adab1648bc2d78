"""`leaf --help` start-up time against a bare `python -c pass`, run side by side.

Target (DESIGN.md): leaf's wall time minus Python's own start-up ≤ 150 ms. Runs alternate so background
load hits both alike; medians are reported.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 15


def wall(argv: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def main() -> None:
    leaf = [sys.executable, "-m", "leaf_cli", "--help"]
    bare = [sys.executable, "-c", "pass"]
    wall(leaf)  # warm the file cache and bytecode
    leaf_times, bare_times = [], []
    for _ in range(RUNS):
        leaf_times.append(wall(leaf))
        bare_times.append(wall(bare))
    leaf_ms, bare_ms = statistics.median(leaf_times) * 1e3, statistics.median(bare_times) * 1e3
    print(f"{'command':<22}{'median ms':>10}")
    print(f"{'python -c pass':<22}{bare_ms:>10.0f}")
    print(f"{'leaf --help':<22}{leaf_ms:>10.0f}")
    print(f"leaf - python: {leaf_ms - bare_ms:.0f} ms (target <= 150 ms); ratio {leaf_ms / bare_ms:.2f}x")


if __name__ == "__main__":
    main()
