"""The record of one episode, written as versioned JSON lines and appended after every step.

Line kinds: one `header`, then `message` and `turn` lines as they happen, then one `end` line. A run that
dies mid-way leaves a readable prefix; `load` accepts it (exit_reason None).

Every line goes through the secrets' `Redactor` (messages, tool observations, the patch, usage, errors): the
value of a secret variable of leaf's environment is written as `[secret NAME]`. The in-memory trajectory is
not redacted. When a secret was redacted from the messages the token log is left out of the file (its ids
would spell the secret back); a `--continue` from such a file sees the markers.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel, Field

from leaf_cli.agent.secrets import Redactor
from leaf_cli.llm.messages import Message, TokenLog, TurnUsage

FORMAT_VERSION = 1


class TurnRecord(BaseModel):
    """Per assistant turn: what it cost and, on token-level engines, what was sampled."""

    index: int
    finish_reason: str
    usage: TurnUsage
    seconds: float
    parse_error: str | None = None
    policy_version: int = 0


class Trajectory(BaseModel):
    version: int = FORMAT_VERSION
    run_id: str
    task: str
    model: str
    workdir: str
    started_at: float = Field(default_factory=time.time)
    tools: list[str] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)
    turns: list[TurnRecord] = Field(default_factory=list)
    exit_reason: str | None = None
    exit_message: str = ""
    patch: str = ""
    wall_seconds: float = 0.0
    token_log: TokenLog | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    def usage(self) -> dict[str, Any]:
        """`usage.turns` (one entry per assistant turn) and the totals beside it.

        A total is None (unknown) when some turn's count is unknown: a sum of the known ones would read as
        a smaller true figure. `unknown_turns` says how many turns the server gave no usage for.
        """
        turns = [t.usage.model_dump() for t in self.turns]
        totals: dict[str, int | None] = {}
        for key in ("prompt_tokens", "cached_tokens", "completion_tokens"):
            values = [t[key] for t in turns]
            totals[key] = None if None in values else sum(values)
        prompt, completion = totals["prompt_tokens"], totals["completion_tokens"]
        total = None if prompt is None or completion is None else prompt + completion
        unknown = sum(1 for t in self.turns if not t.usage.known)
        return {"turns": turns, **totals, "total_tokens": total, "unknown_turns": unknown}

    def final_answer(self) -> str:
        last = self.messages[-1] if self.messages else None
        return last.content if last is not None and last.role == "assistant" and not last.tool_calls else ""

    def assistant_turns(self) -> int:
        return sum(1 for m in self.messages if m.role == "assistant")


class TrajectoryWriter:
    """Appends each step to the JSONL file as it happens, so a crash loses at most the step in flight."""

    def __init__(self, path: Path | None, trajectory: Trajectory, redact: Redactor | None = None) -> None:
        """`redact` defaults to every secret of leaf's environment; callers with `--pass-env` pass their own."""
        self.path = path
        self.redact = redact if redact is not None else Redactor(os.environ)
        self._written_messages = 0
        self._written_turns = 0
        self._redacted = False
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            header = trajectory.model_dump(include={"version", "run_id", "task", "model", "workdir", "started_at", "tools", "extra"})
            path.write_text(json_line({"kind": "header", **header}, self.redact) + "\n", encoding="utf-8")

    def sync(self, trajectory: Trajectory) -> None:
        """Append the messages and turns not yet on disk."""
        lines = [{"kind": "message", **m.model_dump(exclude_none=True)} for m in trajectory.messages[self._written_messages :]]
        self._redacted = self._redacted or self.redact.touches(lines)
        lines += [{"kind": "turn", **t.model_dump()} for t in trajectory.turns[self._written_turns :]]
        self._written_messages = len(trajectory.messages)
        self._written_turns = len(trajectory.turns)
        self._append(lines)

    def close(self, trajectory: Trajectory) -> None:
        self.sync(trajectory)
        end = trajectory.model_dump(include={"exit_reason", "exit_message", "patch", "wall_seconds", "token_log"})
        if self._redacted:
            end["token_log"] = None  # its token ids hold the secret the messages' text no longer does
        self._append([{"kind": "end", **end}])

    def _append(self, lines: list[dict[str, Any]]) -> None:
        if self.path is None or not lines:
            return
        with self.path.open("a", encoding="utf-8") as f:
            for line in lines:
                f.write(json_line(line, self.redact) + "\n")


def json_line(record: dict[str, Any], redact: Redactor | None = None) -> str:
    """One JSON line, readable UTF-8, with every secret value `redact` knows replaced by its marker. Text
    with lone surrogates (a file name that is not UTF-8, as Python's os functions return it) cannot be
    written as UTF-8, so that line is written with JSON's `\\u` escapes, which read back to the same string."""
    if redact is not None:
        record = redact.obj(record)
    text = json.dumps(record, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(record)
    return text


def load(path: Path) -> Trajectory:
    """Read a trajectory file written by `TrajectoryWriter` (also an unfinished one)."""
    records = list(_records(path))
    if not records or records[0].get("kind") != "header":
        raise ValueError(f"{path} is not a leaf trajectory (no header line)")
    header = migrate(records[0])
    data: dict[str, Any] = {k: v for k, v in header.items() if k != "kind"}
    data["messages"] = [{k: v for k, v in r.items() if k != "kind"} for r in records if r.get("kind") == "message"]
    data["turns"] = [{k: v for k, v in r.items() if k != "kind"} for r in records if r.get("kind") == "turn"]
    for r in records:
        if r.get("kind") == "end":
            data.update({k: v for k, v in r.items() if k != "kind"})
    return Trajectory.model_validate(data)


def migrate(header: dict[str, Any]) -> dict[str, Any]:
    """Bring an older header up to FORMAT_VERSION. Version 1 is the first; refuse what we cannot read."""
    version = header.get("version", 1)
    if version > FORMAT_VERSION:
        raise ValueError(f"trajectory format {version} is newer than this leaf reads ({FORMAT_VERSION}); upgrade leaf")
    return header


def _records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from None
