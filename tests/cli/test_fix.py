"""`leaf fix --json` end to end on real temporary git repositories, driven by the replay engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaf_cli.agent.trajectory import load
from tests.cli.fixcli import call, fix_json, leaf, script, turn
from tests.llm.test_openai import Scripted, chunk, server  # noqa: F401 (server is a fixture)


def test_final_answer_prints_one_json_object(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "notes.txt").write_text("untracked before the run\n")
    spec = script(tmp_path / "s.jsonl",
                  turn(call("Read", file_path="calc.py")),
                  turn(call("Edit", file_path="calc.py", old_string="a - b", new_string="a + b")),
                  turn(call("Bash", command="echo made > made.txt && rm test_calc.py")),
                  {"content": "add() now returns the sum."})
    code, out = fix_json(git_repo, spec, "add returns the difference")
    assert code == 0
    assert set(out) == {"exit_reason", "turns", "messages", "patch", "usage", "trajectory", "run_id"}
    assert out["exit_reason"] == "final_answer" and out["turns"] == 4
    assert [m["role"] for m in out["messages"]] == ["system", "user"] + ["assistant", "tool"] * 3 + ["assistant"]
    assert out["messages"][3]["content"].startswith("calc.py\n1. def add(a, b):")
    assert out["messages"][2]["tool_calls"][0]["function"]["name"] == "Read"
    patch = out["patch"]
    assert "+    return a + b" in patch
    assert "new file mode 100644" in patch and "made.txt" in patch
    assert "deleted file mode 100644" in patch and "test_calc.py" in patch
    assert "notes.txt" not in patch  # the user's untracked file was there before: not the run's change
    assert len(out["usage"]["turns"]) == 4 and "prompt_tokens" in out["usage"]
    traj = Path(out["trajectory"])
    assert traj.is_relative_to(Path(__import__("os").environ["LEAF_HOME"]) / "runs")
    assert load(traj).exit_reason == "final_answer"


EXITS = {
    "max_turns": ([turn(call("Glob", pattern="*.py")), turn(call("Glob", pattern="*"))], ["--max-turns", "1"]),
    "max_tokens": ([{"content": "I think the", "finish_reason": "length"}], []),
    "max_context": ([{"content": "", "tool_calls": [call("Glob", pattern="*")], "usage": {"prompt_tokens": 70000}}], []),
    "max_time": ([turn(call("Bash", command="sleep 1.5")), turn(call("Glob", pattern="*"))], ["--max-time", "1"]),
    "format_error": ([{"content": "<tool_call>{\"name\": \"Read\", \"arguments\": {oops</tool_call>"}] * 3, []),
    "loop": ([turn(call("Glob", pattern="*.py"))] * 5, []),
    "replay_exhausted": ([turn(call("Glob", pattern="*.py"))], []),
}


@pytest.mark.parametrize("reason", list(EXITS))
def test_every_exit_reason_exits_1(git_repo: Path, tmp_path: Path, reason: str) -> None:
    turns, flags = EXITS[reason]
    code, out = fix_json(git_repo, script(tmp_path / "s.jsonl", *turns), "task", *flags)
    assert out["exit_reason"] == reason
    assert code == 1


def test_engine_error_from_an_unreachable_server(git_repo: Path) -> None:
    result = leaf("fix", "--json", "--workdir", str(git_repo), "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "task")
    out = json.loads(result.stdout)
    assert (result.exit_code, out["exit_reason"]) == (1, "engine_error")


@pytest.mark.parametrize("args, message", [
    (["--model", "replay:/nonexistent/s.jsonl", "task"], "replay file not found"),
    (["--model", "no-such-model-anywhere", "task"], "no-such-model-anywhere"),
    (["--model", "replay:X", "   "], "empty"),
])
def test_bad_input_exits_2_with_one_line(git_repo: Path, args: list[str], message: str) -> None:
    result = leaf("fix", "--workdir", str(git_repo), *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("leaf: error:") and message in lines[0]


def test_not_a_git_repository(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    result = leaf("fix", "--workdir", str(tmp_path / "plain"), "--model", "replay:x", "task")
    assert result.exit_code == 2 and "not inside a git work tree" in result.stderr
    assert "Traceback" not in result.stderr


def test_agents_md_is_appended_to_the_task(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "AGENTS.md").write_text("Run pytest -q before finishing.\n")
    _code, out = fix_json(git_repo, script(tmp_path / "s.jsonl", {"content": "done"}), "fix add")
    user = out["messages"][1]["content"]
    assert user.startswith("fix add") and "Run pytest -q before finishing." in user and "AGENTS.md" in user


def test_secrets_are_scrubbed_from_bash(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command="env")), {"content": "done"})
    env = {"GITHUB_TOKEN": "ghp-secret", "OPENAI_API_KEY": "sk-secret", "DB_PASSWORD": "pw", "PLAIN_VALUE": "visible",
           "PASSED_TOKEN": "passed"}
    _code, out = fix_json(git_repo, spec, "--pass-env", "PASSED_TOKEN", "task", env=env)
    observation = out["messages"][3]["content"]
    # an allowlist: PATH is there, a variable off the list is not (whatever its name), --pass-env lets one in
    assert "\nPATH=" in observation and "PLAIN_VALUE" not in observation and "PASSED_TOKEN=passed" in observation
    for secret in ("ghp-secret", "sk-secret", "DB_PASSWORD"):
        assert secret not in observation


def test_safety_gate_refuses_and_tells_the_model(git_repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "precious.txt").write_text("keep me\n")
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command="rm -rf ~")), turn(call("Bash", command="git push")),
                  {"content": "done"})
    _code, out = fix_json(git_repo, spec, "task", env={"HOME": str(home)})
    assert out["messages"][3]["content"].startswith("PermissionError: rm of '~' reaches outside")
    assert out["messages"][5]["content"].startswith("PermissionError: git push is not allowed")
    assert (home / "precious.txt").read_text() == "keep me\n"


def test_replay_command_reproduces_observations(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl", turn(call("Read", file_path="calc.py")),
                  turn(call("Edit", file_path="calc.py", old_string="a - b", new_string="a + b")),
                  turn(call("Bash", command="python -c 'from calc import add; print(add(2, 3))'")), {"content": "done"})
    _code, out = fix_json(git_repo, spec, "task")
    result = leaf("replay", out["trajectory"])
    assert result.exit_code == 0, result.stderr
    assert "all observations match" in result.stderr
    assert "return a + b" in (git_repo / "calc.py").read_text()  # the replay ran on a copy


def test_replay_reports_a_mismatch(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl", turn(call("Read", file_path="calc.py")), {"content": "done"})
    _code, out = fix_json(git_repo, spec, "task")
    other = tmp_path / "other"
    other.mkdir()
    (other / "calc.py").write_text("different\n")
    result = leaf("replay", out["trajectory"], "--workdir", str(other))
    assert result.exit_code == 1 and "observation 1 differs" in result.stderr


def test_continue_resumes_the_last_run(git_repo: Path, tmp_path: Path) -> None:
    _code, first = fix_json(git_repo, script(tmp_path / "a.jsonl", {"content": "first answer"}), "first task")
    result = leaf("fix", "--json", "--continue", "--workdir", str(git_repo), "--model",
                  script(tmp_path / "b.jsonl", {"content": "second answer"}), "follow-up")
    second = json.loads(result.stdout)
    assert [m["content"] for m in second["messages"]][1:] == ["first task", "first answer", "follow-up", "second answer"]
    assert second["run_id"] != first["run_id"]


def test_max_tokens_flag_caps_each_reply(git_repo: Path, tmp_path: Path) -> None:
    """A reply cut at `--max-tokens` ends the run as max_tokens; the same cut under the default cap (8192) is
    the context's doing (FrogNano's reading of a cut reply), so the flag is what decides the reason."""
    cut = {"content": "I think the", "finish_reason": "length", "usage": {"prompt_tokens": 50, "completion_tokens": 96}}
    _code, capped = fix_json(git_repo, script(tmp_path / "a.jsonl", cut), "task", "--yes", "--max-tokens", "96")
    assert capped["exit_reason"] == "max_tokens"
    assert "reply cut at 96 tokens" in load(Path(capped["trajectory"])).exit_message
    _code, default = fix_json(git_repo, script(tmp_path / "b.jsonl", cut), "task", "--yes")
    assert default["exit_reason"] == "max_context"
    for command in ("fix", "chat"):
        result = leaf(command, "--workdir", str(git_repo), "--max-tokens", "0", "task")
        assert result.exit_code == 2 and "--max-tokens" in result.stderr


def test_max_tokens_reaches_the_openai_request(git_repo: Path, server: Scripted) -> None:
    server.replies.append({"events": [chunk({"role": "assistant", "content": "done"}), chunk({}, "stop"), "data: [DONE]\n\n"]})
    result = leaf("fix", "--json", "--yes", "--workdir", str(git_repo), "--base-url", server.url, "--model", "m",
                  "--max-tokens", "77", "task")
    assert json.loads(result.stdout)["exit_reason"] == "final_answer", result.stderr
    sent = server.requests[0]
    assert sent["max_completion_tokens"] == 77 and sent["max_tokens"] == 77
