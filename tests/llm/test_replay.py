"""The replay engine reads scripts in leaf's shape and OpenAI's, and fails clearly on bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.llm.engine import ReplayExhausted, Sampling
from leaf_cli.llm.messages import Conversation
from leaf_cli.llm.replay import ReplayEngine


def write(path: Path, *lines: object) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_leaf_and_openai_call_shapes(tmp_path: Path) -> None:
    script = write(
        tmp_path / "s.jsonl",
        {"content": "", "reasoning_content": "hm", "tool_calls": [{"name": "Read", "arguments": {"file_path": "a.py"}}]},
        "",
        {"tool_calls": [{"id": "x1", "type": "function", "function": {"name": "Glob", "arguments": "{\"pattern\": \"*\"}"}}]},
        {"tool_calls": [{"type": "function", "function": {"name": "Glob", "arguments": "{not json"}}]},
    )
    engine = ReplayEngine.from_file(script)
    conv, sampling = Conversation(), Sampling()
    deltas: list[tuple[str, str]] = []
    first = engine.complete(conv, [], sampling, lambda kind, text: deltas.append((kind, text)))
    assert first.reasoning == "hm" and first.tool_calls[0].arguments == {"file_path": "a.py"}
    assert deltas == [("reasoning", "hm")]
    second = engine.complete(conv, [], sampling)
    assert (second.tool_calls[0].id, second.tool_calls[0].name, second.tool_calls[0].arguments) == ("x1", "Glob", {"pattern": "*"})
    assert engine.complete(conv, [], sampling).tool_calls[0].arguments == {}
    with pytest.raises(ReplayExhausted):
        engine.complete(conv, [], sampling)


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(LeafError, match="not found"):
        ReplayEngine.from_file(tmp_path / "nope.jsonl")
    with pytest.raises(LeafError, match=r"bad.jsonl:2: not a JSON line"):
        ReplayEngine.from_file(write(tmp_path / "bad.jsonl", {"content": "ok"}, "{oops"))
    with pytest.raises(LeafError, match=r":1: expected a JSON object"):
        ReplayEngine.from_file(write(tmp_path / "list.jsonl", "[1, 2]"))
