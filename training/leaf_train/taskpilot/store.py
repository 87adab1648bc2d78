"""The run folder: every stage appends JSON lines as it goes, so a killed run resumes where it stopped.

Files: snapshots.jsonl, candidates.jsonl, validated.jsonl, calibration.jsonl, decisions.jsonl, tasks.jsonl,
cover/<snapshot>.json (coverage map), config.json. A torn last line (killed mid-write) is ignored on load.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from leaf_train.taskpilot.candidate import Calibration, Candidate, Decision, Validation

M = TypeVar("M", bound=BaseModel)


class Store:
    """Thread-safe appends and the in-memory indexes resume needs."""

    def __init__(self, out: Path) -> None:
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.candidates = {c.id: c for c in self._load("candidates", Candidate)}
        self.validations = {v.code_key: v for v in self._load("validated", Validation)}
        self.calibrations = {c.candidate: c for c in self._load("calibration", Calibration)}
        self.decisions = {d.root: d for d in self._load("decisions", Decision)}

    def path(self, name: str) -> Path:
        return self.out / f"{name}.jsonl"

    def _load(self, name: str, model: type[M]) -> list[M]:
        return [model.model_validate(r) for r in read_jsonl(self.path(name))]

    def append(self, name: str, record: BaseModel | dict[str, Any]) -> None:
        line = record.model_dump_json() if isinstance(record, BaseModel) else json.dumps(record, ensure_ascii=False)
        with self._lock:
            with self.path(name).open("a", encoding="utf-8") as f:
                f.write(line + "\n")
            if isinstance(record, Candidate):
                self.candidates[record.id] = record
            elif isinstance(record, Validation):
                self.validations[record.code_key] = record
            elif isinstance(record, Calibration):
                self.calibrations[record.candidate] = record
            elif isinstance(record, Decision):
                self.decisions[record.root] = record

    def accepted(self) -> int:
        with self._lock:
            return sum(d.accepted for d in self.decisions.values())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every complete JSON line of `path` (none when it does not exist)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # the line a kill tore in half
    return records
