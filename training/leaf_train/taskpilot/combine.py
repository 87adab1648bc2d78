"""The combine generator: several validated procedural bugs, in different functions, as one harder task.

Single bugs come from the procedural generator and are validated first (their records land in
validated.jsonl like any other); each time `size` valid bugs in distinct functions are pooled, their
patches are applied together and the result is one new candidate, validated again as a whole.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable, Iterator

from leaf_train.taskpilot.candidate import Candidate, Validation, digest
from leaf_train.taskpilot.diffs import file_diff
from leaf_train.taskpilot.snapshot import Snapshot, export
from leaf_train.taskpilot.validate import apply_diff


def generate(snap: Snapshot, out: Path, singles: Iterator[Candidate], validate: Callable[[Candidate], Validation],
             size: int) -> Iterator[Candidate]:
    """Combined candidates from the validated singles of `singles`, `size` bugs each."""
    pool: list[Candidate] = []
    for single in singles:
        if not validate(single).ok:
            continue
        if any(p.meta.get("function") == single.meta.get("function") and p.meta.get("file") == single.meta.get("file")
               for p in pool):
            continue
        pool.append(single)
        if len(pool) == size:
            combined = combine(snap, out, pool)
            pool = []
            if combined is not None:
                yield combined


def combine(snap: Snapshot, out: Path, parts: list[Candidate]) -> Candidate | None:
    """One candidate whose start state holds every part's bug; None when the patches do not compose."""
    with tempfile.TemporaryDirectory(prefix="taskpilot-combine-") as tmp:
        clean, buggy = Path(tmp) / "clean", Path(tmp) / "buggy"
        export(out / snap.repo, snap.commit, clean)
        export(out / snap.repo, snap.commit, buggy)
        for part in parts:
            if apply_diff(part.bug_patch, buggy) != "ok":
                return None
        files = sorted({p.meta["file"] for p in parts})
        bug = "".join(file_diff(f, (clean / f).read_text(encoding="utf-8"), (buggy / f).read_text(encoding="utf-8")) for f in files)
        gold = "".join(file_diff(f, (buggy / f).read_text(encoding="utf-8"), (clean / f).read_text(encoding="utf-8")) for f in files)
    return Candidate(
        id=digest(snap.id, "combine", bug), snapshot=snap.id, generator="combine", bug_patch=bug, patch=gold,
        bug_type="combine_" + "+".join(sorted(p.bug_type for p in parts)),
        meta={"operator": "combine", "components": [p.id for p in parts], "file": ", ".join(files),
              "function": ", ".join(sorted({p.meta["function"] for p in parts})),
              "secret_lines": sorted({s for p in parts for s in p.meta.get("secret_lines", [])}),
              "covering_tests": sorted({t for p in parts for t in p.meta.get("covering_tests", [])})},
    )
