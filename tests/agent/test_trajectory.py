"""Trajectories are appended as they happen, read back whole, and refuse what they cannot read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaf_cli.agent.secrets import Redactor
from leaf_cli.agent.trajectory import Trajectory, TrajectoryWriter, TurnRecord, json_line, load
from leaf_cli.llm.messages import Message, TokenLog, TurnUsage


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

    from leaf_cli.agent import EpisodeHooks, run_episode
    from leaf_cli.agent.trajectory import load
    from leaf_cli.llm.replay import ReplayEngine
    from leaf_cli.tools import Workspace

    open(os.path.join(os.fsencode(git_repo), b"caf\xe9.txt"), "wb").close()
    turns = [{"tool_calls": [{"name": "Glob", "arguments": {"pattern": "*.txt"}}]}, {"content": "done"}]
    path = tmp_path / "t.jsonl"
    traj = run_episode("list", ReplayEngine(turns), Workspace(git_repo), hooks=EpisodeHooks(trajectory_path=path))
    assert traj.exit_reason == "final_answer"
    assert traj.messages[3].content == "caf\ufffd.txt"
    path.read_text(encoding="utf-8")  # valid UTF-8 on disk
    assert load(path).messages[3].content == "caf\ufffd.txt"


def test_every_line_is_redacted_on_disk_and_the_trajectory_in_memory_is_not(tmp_path: Path) -> None:
    token, password = "ghp_secret0123", "pg-pass-77"
    redact = Redactor({"GITHUB_TOKEN": token, "PGPASSWORD": password, "SHORT_TOKEN": "abc12", "HOME": "/home/u",
                       "LEAF_HOME": "/leaf/state", "LEAF_API_KEY": "sk-leaf-0099"},
                      pass_env=["PGPASSWORD"])
    traj = Trajectory(run_id="r1", task=f"use {token}", model="m", workdir="/w",
                      messages=[Message(role="system", content="s"), Message(role="user", content=f"use {token}")])
    writer = TrajectoryWriter(tmp_path / "t.jsonl", traj, redact)
    traj.messages.append(Message(role="tool", content=f"{token}\n{password}\nabc12 /home/u\nls /leaf/state sk-leaf-0099",
                                 tool_call_id="c1"))
    traj.turns.append(TurnRecord(index=0, finish_reason="stop", usage=TurnUsage(), seconds=0.1, parse_error=token))
    traj.exit_reason, traj.exit_message, traj.patch = "error", f"failed: {token}", f"+{token}\n"
    traj.token_log = TokenLog(ids=[1, 2, 3], mask=[0, 1, 1], logprobs=[0.0, -0.1, -0.2], versions=[-1, 0, 0])
    writer.close(traj)
    raw = (tmp_path / "t.jsonl").read_text()
    assert token not in raw and raw.count("[secret GITHUB_TOKEN]") == 6  # header, user, tool, turn, error, patch
    assert password in raw  # passed by --pass-env: the user's choice, recorded as the agent saw it
    assert "abc12 /home/u" in raw  # too short, and not a secret: kept
    assert "ls /leaf/state [secret LEAF_API_KEY]" in raw  # leaf's state path is hidden, not a credential
    loaded = load(tmp_path / "t.jsonl")
    assert loaded.token_log is None  # its ids would spell the secret back
    assert traj.messages[2].content.startswith(token) and traj.token_log is not None  # memory untouched


def test_default_redactor_is_leafs_environment_and_a_clean_episode_keeps_its_token_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_API_KEY", "k-secret-0042")
    traj = make()
    writer = TrajectoryWriter(tmp_path / "t.jsonl", traj)
    traj.token_log = TokenLog(ids=[5], mask=[1], logprobs=[-0.5], versions=[0])
    writer.close(traj)
    assert load(tmp_path / "t.jsonl").token_log is not None
    assert "k-secret-0042" not in json_line({"a": ["k-secret-0042"]}, writer.redact)
    assert json_line({"a": "k-secret-0042"}) == '{"a": "k-secret-0042"}'  # no redactor: the record as is
