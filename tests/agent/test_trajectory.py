"""Trajectories are appended as they happen, read back whole, and refuse what they cannot read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaf_cli.agent.trajectory import Trajectory, TrajectoryWriter, TurnRecord, load
from leaf_cli.llm.messages import Message, TurnUsage


def make() -> Trajectory:
    return Trajectory(run_id="r1", task="t", model="m", workdir="/w",
                      messages=[Message(role="system", content="s"), Message(role="user", content="t")])


def test_unfinished_file_loads_with_no_exit_reason(tmp_path: Path) -> None:
    traj = make()
    writer = TrajectoryWriter(tmp_path / "t.jsonl", traj)
    writer.sync(traj)
    traj.messages.append(Message(role="assistant", content="partial"))
    traj.turns.append(TurnRecord(index=0, finish_reason="stop", usage=TurnUsage(prompt_tokens=3), seconds=0.1))
    writer.sync(traj)
    loaded = load(tmp_path / "t.jsonl")
    assert loaded.exit_reason is None
    assert [m.content for m in loaded.messages] == ["s", "t", "partial"]
    assert loaded.turns[0].usage.prompt_tokens == 3
    kinds = [json.loads(line)["kind"] for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert kinds == ["header", "message", "message", "message", "turn"]


def test_newer_format_and_garbage_are_refused(tmp_path: Path) -> None:
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"kind": "header", "version": 99, "run_id": "r", "task": "t", "model": "m", "workdir": "w"}) + "\n")
    with pytest.raises(ValueError, match="newer than this leaf reads"):
        load(newer)
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"kind": "header", "run_id": "r", "task": "t", "model": "m", "workdir": "w"}\nnot json\n')
    with pytest.raises(ValueError, match=r"garbage.jsonl:2: not JSON"):
        load(garbage)
    with pytest.raises(ValueError, match="not a leaf trajectory"):
        load(_write(tmp_path / "headless.jsonl", '{"kind": "message"}\n'))


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_file_name_that_is_not_utf8_is_written_and_read_back(git_repo, tmp_path) -> None:
    # Glob returns such a name with a lone surrogate (os.fsdecode); the writer used to crash on it.
    import os

    from leaf_cli.agent import run_episode
    from leaf_cli.agent.trajectory import load
    from leaf_cli.llm.replay import ReplayEngine
    from leaf_cli.tools import Workspace

    open(os.path.join(os.fsencode(git_repo), b"caf\xe9.txt"), "wb").close()
    turns = [{"tool_calls": [{"name": "Glob", "arguments": {"pattern": "*.txt"}}]}, {"content": "done"}]
    path = tmp_path / "t.jsonl"
    traj = run_episode("list", ReplayEngine(turns), Workspace(git_repo), trajectory_path=path)
    assert traj.exit_reason == "final_answer"
    assert traj.messages[3].content == "caf\udce9.txt"
    path.read_text(encoding="utf-8")  # valid UTF-8 on disk
    assert load(path).messages[3].content == "caf\udce9.txt"
