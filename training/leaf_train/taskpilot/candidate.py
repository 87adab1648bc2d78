"""The records each stage appends to its JSONL file: candidates, validations, calibrations, decisions."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, Field


def digest(*parts: Any) -> str:
    """A short stable id for JSON-able parts."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:10]


class Candidate(BaseModel):
    """A proposed task: its start state (clean snapshot + `bug_patch`), gold fix, hidden tests, statement.

    Refinement writes a new Candidate with `parent` set and the next `round`; code fields are shared.
    """

    id: str
    snapshot: str
    generator: str
    round: int = 0
    parent: str | None = None
    bug_patch: str = Field("", description="clean -> start state; empty when the start state is the snapshot.")
    patch: str = Field(description="The gold fix: start state -> fixed.")
    test_patch: str = Field("", description="New hidden test files (llm); empty when F2P are existing tests.")
    problem_statement: str = Field("", description="Procedural statements are written after validation.")
    specificity: int | None = Field(None, description="Statement specificity level 0 (vague) .. 4 (localized).")
    bug_type: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)

    def code_key(self) -> str:
        """What validation depends on: refinements that change only the statement share it."""
        return digest(self.snapshot, self.bug_patch, self.patch, self.test_patch)


class Validation(BaseModel):
    """Validation of a candidate's code (keyed by `code_key`). `reason` names the rule that dropped it."""

    candidate: str
    code_key: str
    ok: bool
    reason: str | None = None
    detail: str = ""
    base_commit: str = ""
    f2p: list[str] = Field(default_factory=list)
    p2p: list[str] = Field(default_factory=list)
    flaky: list[str] = Field(default_factory=list)
    observations: dict[str, str] = Field(default_factory=dict, description="F2P node id -> crash message on the start state.")
    gold_runs: int = 0
    gold_resolved: int = 0
    empty_resolved: int = 0
    seconds: float = 0.0


class Calibration(BaseModel):
    """N policy rollouts on one statement of a candidate, and where p̂ falls against the band."""

    candidate: str
    round: int
    specificity: int | None
    solved: int
    rollouts: int
    p_hat: float
    ci_low: float
    ci_high: float
    verdict: str = Field(description="in_band, below or above.")
    outcomes: list[dict[str, Any]] = Field(default_factory=list)
    seconds: float = 0.0


class Decision(BaseModel):
    """The end of a candidate family: accepted (with its task id) or dropped (with the reason)."""

    candidate: str
    root: str
    accepted: bool
    reason: str
    instance_id: str | None = None
    p_hat_first: float | None = None
    p_hat_final: float | None = None
