"""Run records: one folder per `leaf fix` run under the state directory, holding run.json and the trajectory.

The root is platformdirs' user_state_dir("leaf"); LEAF_HOME overrides it (tests, portable installs).
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from leaf_cli.errors import LeafError
from leaf_cli.repo.checkpoint import RepoState

RunStatus = Literal["running", "kept", "committed", "branched", "undone"]
"""A run's place in the history. kept: its change is in the work tree; committed: the review committed it on
the current branch; branched: the review committed it on a new branch and put this one back; undone: the
repository is as it was before the run. `running` only while a leaf process runs it (or it was killed)."""


def state_root() -> Path:
    """Where leaf keeps runs, checkpoints and trajectories."""
    override = os.environ.get("LEAF_HOME")
    if override:
        return Path(override).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_state_dir("leaf"))


def runs_root() -> Path:
    return state_root() / "runs"


class RunRecord(BaseModel):
    """What `leaf runs` lists and `leaf undo` needs."""

    run_id: str
    top: str = Field(description="Top of the git work tree the run changed.")
    workdir: str = Field(description="The agent's working directory (top or a folder inside it).")
    store: str = Field(description="The checkpoint store (a bare repository outside the workdir).")
    started_at: float = Field(default_factory=time.time)
    finished_at: float | None = None
    title: str = ""
    model: str = ""
    status: RunStatus = "running"
    exit_reason: str | None = None
    before: RepoState
    after: RepoState | None = None
    files_changed: int = 0
    insertions: int = 0
    deletions: int = 0
    trajectory: str = ""
    continued_from: str | None = None
    pid: int | None = Field(None, description="The leaf process running it (while status is running).")
    kept_refs: list[str] = Field(default_factory=list, description="Refs leaf made for the user (a review's "
                                 "branch, an undone commit, what `undo --force` overwrote): no undo removes them.")
    commit: str | None = Field(None, description="The commit the review made (committed and branched runs).")
    branch_name: str | None = Field(None, description="The branch the review moved the change to (branched runs).")
    undone_from: str | None = Field(None, description="The state undo left: committed, branched or kept.")

    @field_validator("status", mode="before")
    @classmethod
    def _older_status(cls, value: object) -> object:
        return "kept" if value == "finished" else value  # records written before the history had states

    @property
    def folder(self) -> Path:
        return runs_root() / self.run_id

    def save(self) -> None:
        """Write run.json atomically (a crash never leaves half a record)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / "run.json.tmp"
        tmp.write_text(self.model_dump_json(indent=1), encoding="utf-8")
        os.replace(tmp, self.folder / "run.json")


def new_run_id() -> str:
    """Unique across processes; sortable by start second only (two runs in one second order by the random
    part), so `list_runs` orders by the recorded start time."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def load_run(run_id: str) -> RunRecord:
    """The run called `run_id` (a unique prefix is enough)."""
    root = runs_root()
    exact = root / run_id / "run.json"
    if exact.is_file():
        return _read(exact)
    matches = sorted(p for p in root.glob(f"{run_id}*/run.json")) if root.is_dir() and run_id else []
    if len(matches) == 1:
        return _read(matches[0])
    if not matches:
        raise LeafError(f"no run called {run_id!r}; `leaf runs` lists them")
    raise LeafError(f"{run_id!r} matches {len(matches)} runs; give more of the id")


def list_runs(top: Path | None = None) -> list[RunRecord]:
    """Runs newest first (by start time: undo and --continue take the first); only those of the work tree
    `top` when given."""
    root = runs_root()
    if not root.is_dir():
        return []
    records = []
    for path in root.glob("*/run.json"):
        try:
            record = _read(path)
        except LeafError:
            continue  # a damaged record must not hide the others
        if top is None or Path(record.top) == top.resolve():
            records.append(record)
    return sorted(records, key=lambda r: (r.started_at, r.run_id), reverse=True)


def _read(path: Path) -> RunRecord:
    try:
        return RunRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise LeafError(f"run record {path} is unreadable ({exc.__class__.__name__})") from None
