"""The stage-state file of an iteration folder: which stages are done and what each produced.

`state.json` is rewritten atomically (temp file + rename) after every stage and every RL chunk, so a
killed iteration resumes at the stage, and inside RL at the validation chunk, where it stopped. The
config digest is recorded: resuming with a different config is refused instead of mixing two runs.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from leaf_cli.errors import LeafError


class Evaluation(BaseModel):
    """One validation of a policy: after `step` RL steps (0 = the starting policy)."""

    step: int
    solve_rate: float
    resolved: int
    attempts: int
    run_dir: str

    @property
    def se(self) -> float:
        """Standard error of the solve rate over the attempts, Agresti–Coull adjusted (never 0, so a 0/2 or a
        2/2 evaluation is not taken as exact): sqrt(p̃(1 − p̃) / (n + 4)), p̃ = (resolved + 2) / (n + 4)."""
        n = self.attempts + 4
        p = (self.resolved + 2) / n
        return (p * (1 - p) / n) ** 0.5


class IterationState(BaseModel):
    iteration: int
    config_digest: str
    done: dict[str, dict[str, Any]] = Field(default_factory=dict, description="stage -> what it produced")
    evaluations: list[Evaluation] = Field(default_factory=list)
    rft_after: list[int] = Field(default_factory=list, description="RL steps after which RFT steps ran.")
    seconds: dict[str, float] = Field(default_factory=dict, description="Wall seconds spent per stage, over all runs.")
    consolidation: dict[str, Any] = Field(default_factory=dict, description="Lost behaviours and the restore set.")


class StateFile:
    def __init__(self, folder: Path, iteration: int, config_text: str) -> None:
        self.path = folder / "state.json"
        digest = hashlib.sha256(config_text.encode()).hexdigest()[:16]
        if self.path.is_file():
            self.state = IterationState.model_validate_json(self.path.read_text(encoding="utf-8"))
            if self.state.config_digest != digest:
                raise LeafError(f"{folder} was started with a different config (digest {self.state.config_digest}, "
                                f"now {digest}); choose another --out or restore the config")
        else:
            self.state = IterationState(iteration=iteration, config_digest=digest)
            self.save()

    def is_done(self, stage: str) -> bool:
        return stage in self.state.done

    def output(self, stage: str) -> dict[str, Any]:
        return self.state.done[stage]

    def finish(self, stage: str, output: dict[str, Any] | None = None) -> dict[str, Any]:
        self.state.done[stage] = output or {}
        self.save()
        return self.state.done[stage]

    def save(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(self.state.model_dump_json(indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)


def read_state(folder: Path) -> IterationState | None:
    """The state of an iteration folder, or None when it has none."""
    path = folder / "state.json"
    return IterationState.model_validate(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None
