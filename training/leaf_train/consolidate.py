"""`leaf train consolidate`: tool-use statistics per checkpoint, the behaviours lost, and the restore set.

    leaf train consolidate --out DIR [--iteration N]   every checkpoint the iteration driver validated
    leaf train consolidate RUN_DIR [RUN_DIR ...]        given eval run folders (`leaf eval --out`), in order

Prints one row per checkpoint (tool mix, validate-before-answer rate, Edit share, format errors per turn,
turns, solve rate). With --iteration N (N > 1) it compares iteration N's starting policy against every
earlier checkpoint, names the behaviours lost, and writes the restore set (successful earlier trajectories
that show them) to DIR/iteration-N/consolidation/restore.jsonl. The driver mixes that set into iteration
N's RL when `consolidation.enabled` (see leaf_train.driver.restore); its summary.md reports the statistics
before and after.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from leaf_train.driver.behaviours import checkpoint_stats, lost_behaviours, stats_table
from leaf_train.driver.restore import eval_runs, restore_examples


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="leaf train consolidate", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", type=Path, help="eval run folders, oldest checkpoint first")
    parser.add_argument("--out", type=Path, help="the iteration driver's output folder (DIR of --out DIR)")
    parser.add_argument("--iteration", type=int, help="compare iteration N's starting policy with earlier checkpoints")
    parser.add_argument("--tolerance", type=float, default=0.05, help="a drop larger than this is a lost behaviour")
    parser.add_argument("--max-examples", type=int, default=256, help="most trajectories in the restore set")
    parser.add_argument("--json", type=Path, help="also write the statistics as JSON here")
    return parser


def main(argv: list[str]) -> int:
    """Entry point of `leaf train consolidate ARGS...`; returns the exit status (2: bad input)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    runs = list(args.runs)
    if args.out is not None:
        last = args.iteration if args.iteration else _iterations(args.out)
        runs += eval_runs(args.out, range(1, last + 1))
    missing = [r for r in runs if not (r / "results.jsonl").is_file()]
    if missing or not runs:
        print(f"leaf: error: {'no eval run folders found' if not runs else f'{missing[0]} holds no results.jsonl'} "
              "(give eval run folders, or --out DIR of `leaf train --iteration`)", file=sys.stderr)
        return 2
    stats = [checkpoint_stats(r) for r in runs]
    print(stats_table(stats))
    record: dict = {"checkpoints": [s.model_dump() for s in stats]}
    if args.out is not None and args.iteration and args.iteration > 1:
        start = args.out / f"iteration-{args.iteration}" / "eval" / "step_000000"
        earlier_runs = eval_runs(args.out, range(1, args.iteration))
        if not (start / "results.jsonl").is_file():
            print(f"leaf: error: {start} holds no results: run iteration {args.iteration} up to its baseline first",
                  file=sys.stderr)
            return 2
        lost = lost_behaviours([checkpoint_stats(r) for r in earlier_runs], checkpoint_stats(start), args.tolerance)
        examples = restore_examples(earlier_runs, lost, args.max_examples) if lost else []
        target = args.out / f"iteration-{args.iteration}" / "consolidation" / "restore.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(json.dumps(e) + "\n" for e in examples), encoding="utf-8")
        print(f"lost behaviours: {lost or 'none'}; restore set: {len(examples)} trajectories -> {target}")
        record.update({"lost": lost, "restore_set": str(target), "examples": len(examples)})
    if args.json is not None:
        args.json.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


def _iterations(out: Path) -> int:
    found = [int(p.name.split("-")[1]) for p in out.glob("iteration-*") if p.name.split("-")[1].isdigit()]
    return max(found, default=0)
