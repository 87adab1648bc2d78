"""What the private home costs at a sandbox's start and in a Bash call, against the sandbox without it.

Times, on this machine's own home (its toolchains, its login startup):
  start   open_sandbox + its first `echo hi` + close, with the private home (the copy of the shims, the one
          captured login startup) and without it (the real home read-only, as before)
  call    one more `bash -lc 'echo hi'` in a started sandbox, both ways
and prints each as a ratio with / without. Usage: python bench/bench_sandbox_home.py [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from leaf_cli.agent import sandbox as sandbox_module
from leaf_cli.agent.sandbox import open_sandbox
from leaf_cli.agent.secrets import scrub_env


def _run(prefix: list[str], cwd: Path) -> None:
    subprocess.run([*prefix, "/bin/bash", "-lc", "echo hi"], cwd=cwd, env=scrub_env(os.environ),
                   capture_output=True, check=True, timeout=60)


def measure(work: Path, state: Path, repeat: int) -> tuple[float, float]:
    starts, calls = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        box = open_sandbox("bwrap", work, work, state, env=scrub_env(os.environ))
        _run(box.prefix, work)
        t1 = time.perf_counter()
        _run(box.prefix, work)
        t2 = time.perf_counter()
        box.close()
        starts.append(t1 - t0)
        calls.append(t2 - t1)
    return statistics.median(starts), statistics.median(calls)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work, state = Path(tmp) / "work", Path(tmp) / "state"
        work.mkdir()
        with_home = measure(work, state, args.repeat)
        real = sandbox_module.private_home
        sandbox_module.private_home = lambda *a, **k: None  # the sandbox as it was: the real home, read-only
        try:
            without = measure(work, state, args.repeat)
        finally:
            sandbox_module.private_home = real
    print(f"start (open + first call + close)  with/without private home: {with_home[0] / without[0]:.2f}x")
    print(f"later Bash call                    with/without private home: {with_home[1] / without[1]:.2f}x")


if __name__ == "__main__":
    main()
