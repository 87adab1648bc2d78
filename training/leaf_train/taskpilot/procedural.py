"""The procedural generator: one injected bug per candidate, no model needed.

Sites are the rewritable nodes (mutate.py) inside functions that passing tests call; they are visited
round-robin across functions in a seeded order, so a run spreads over the code instead of piling bugs
into one function. The gold patch is the reverse diff; F2P are the existing tests that then fail (found
by validation); the statement is written afterwards from what those tests observe (statement.py).
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path
from typing import Iterator

from leaf_train.taskpilot import mutate
from leaf_train.taskpilot.candidate import Candidate, digest
from leaf_train.taskpilot.diffs import changed_lines, file_diff
from leaf_train.taskpilot.snapshot import Snapshot

Cover = dict[str, list[tuple[str, int, str]]]
_MAX_COVERING = 200


def is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    parts = path.split("/")[:-1]
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py" or \
        any(p in ("tests", "test", "testing") for p in parts)


def covered_functions(cover: Cover) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """(file, function name) -> [(first line of the code object, a test calling it)]."""
    index: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for test, calls in sorted(cover.items()):
        for path, first_line, name in calls:
            if not is_test_file(path):
                index[(path, name)].append((first_line, test))
    return index


def read_sources(tree: Path, cover: Cover) -> dict[str, str]:
    """The text of every covered, non-test Python file of the clean `tree` (read once, up front)."""
    paths = sorted({p for p, _ in covered_functions(cover)})
    return {p: (tree / p).read_text(encoding="utf-8") for p in paths if p.endswith(".py") and (tree / p).is_file()}


def generate(snap: Snapshot, sources: dict[str, str], cover: Cover, seed: int) -> Iterator[Candidate]:
    """Candidates for every covered site of `sources`, round-robin over functions, seeded. Lazy: each
    bug is materialized only when drawn (a package has thousands of sites)."""
    index = covered_functions(cover)
    by_function: dict[tuple[str, str, int], list[mutate.Site]] = defaultdict(list)
    for path, text in sources.items():
        try:
            found = mutate.sites(path, text)
        except Exception:  # noqa: BLE001 - a file libcst cannot parse just offers no sites
            continue
        for site in found:
            first, name_line = site.function_lines
            if any(first <= line <= name_line for line, _ in index.get((path, site.function), [])):
                by_function[(path, site.function, first)].append(site)
    rng = random.Random(f"{seed}:{snap.id}")
    groups = [by_function[k] for k in sorted(by_function)]
    rng.shuffle(groups)
    for group in groups:
        rng.shuffle(group)
    for round_ in range(max((len(g) for g in groups), default=0)):
        for group in groups:
            if round_ < len(group):
                cand = _candidate(snap, group[round_], sources, index)
                if cand is not None:
                    yield cand


def _candidate(snap: Snapshot, site: mutate.Site, sources: dict[str, str],
               index: dict[tuple[str, str], list[tuple[int, str]]]) -> Candidate | None:
    old = sources[site.path]
    new = mutate.apply(old, site)
    if new is None:
        return None
    bug = file_diff(site.path, old, new)
    first, name_line = site.function_lines
    covering = sorted({t for line, t in index[(site.path, site.function)] if first <= line <= name_line})
    return Candidate(
        id=digest(snap.id, bug), snapshot=snap.id, generator="procedural", bug_patch=bug,
        patch=file_diff(site.path, new, old), bug_type=site.operator,
        meta={"operator": site.operator, "file": site.path, "function": site.function, "line": site.line,
              "secret_lines": changed_lines(old, new), "covering_tests": covering[:_MAX_COVERING]},
    )
