"""TaskPilot throughput: validated candidates per minute with 2 workers against 1, on the same PyPI
package, and time per candidate by stage (snapshot, validation, calibration).

The policy is the SCRIPTED oracle (no model), so the figures measure the pipeline (git, pytest in the
sandbox, the harness, grading), not a model. Usage: python bench/bench_taskpilot.py [--candidates 6]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from leaf_train.taskpilot import pipeline
from leaf_train.taskpilot.config import SynthConfig
from leaf_train.taskpilot.store import read_jsonl

SOURCE = "pypi:toolz==1.0.0"
TESTS = ["toolz/tests/test_itertoolz.py"]


def one_run(workers: int, candidates: int, cache: Path, out: Path) -> dict:
    cfg = SynthConfig(sources=[SOURCE], tests=TESTS, target=candidates, max_candidates=candidates, rollouts=2,
                      rounds=0, band=(0.0, 1.0), workers=workers, out=out, cache_dir=cache)
    began = time.monotonic()
    pipeline.run(cfg)
    wall = time.monotonic() - began
    snaps = read_jsonl(out / "snapshots.jsonl")
    vals = read_jsonl(out / "validated.jsonl")
    cals = read_jsonl(out / "calibration.jsonl")
    snapshot_s = sum(s.get("seconds") or 0 for s in snaps)
    work_wall = wall - snapshot_s
    return {"workers": workers, "wall_s": round(wall, 1), "snapshot_s": round(snapshot_s, 1),
            "validated": len(vals), "valid": sum(v["ok"] for v in vals),
            "validated_per_min": round(len(vals) / (work_wall / 60), 2),
            "validation_s_per_candidate": round(sum(v["seconds"] for v in vals) / max(1, len(vals)), 2),
            "calibration_s_per_candidate": round(sum(c["seconds"] for c in cals) / max(1, len(cals)), 2),
            "rollout_s": round(sum(c["seconds"] for c in cals) / max(1, sum(c["rollouts"] for c in cals)), 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--candidates", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-taskpilot-") as tmp:
        cache = Path(tmp) / "cache"
        # Warm-up on the same candidates: download, repository, venv and the eval machinery's per-commit
        # snapshot cache are built here, so neither timed run pays for them (they share the cache).
        warm = one_run(1, args.candidates, cache, Path(tmp) / "warm")
        print(f"warm-up (download + environment + baseline + first pass): {warm['wall_s']} s")
        base = one_run(1, args.candidates, cache, Path(tmp) / "w1")
        two = one_run(2, args.candidates, cache, Path(tmp) / "w2")
    for row in (base, two):
        print(json.dumps(row))
    print(f"validated candidates/min: 1 worker {base['validated_per_min']}, 2 workers {two['validated_per_min']} "
          f"-> ratio {two['validated_per_min'] / base['validated_per_min']:.2f}x (2 shared cores here)")
    print(f"per candidate: validation {base['validation_s_per_candidate']} s, calibration "
          f"{base['calibration_s_per_candidate']} s (N=2 rollouts, {base['rollout_s']} s each), snapshot "
          f"{base['snapshot_s']} s once per package")


if __name__ == "__main__":
    main()
