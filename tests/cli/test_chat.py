"""`leaf chat` in a real terminal (pexpect) with the replay engine: messages continue one conversation, Ctrl-C
stops a turn (and its process group) but not the chat, /diff and /undo, the review on leaving, Ctrl-D."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pexpect
import pytest

from leaf_cli.agent.trajectory import load
from leaf_cli.repo.runs import list_runs
from tests.cli.fixcli import call, fix_json, leaf, script, turn

PROMPT = "›"  # prompt-toolkit draws the space after it with a cursor move


def _spawn(repo: Path, *args: str) -> pexpect.spawn:
    # HOME elsewhere: the user's login profile (`bash -lc`) must not run, nor their leaf config be read.
    home = repo.parent / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@e.com", "COLUMNS": "120", "TERM": "xterm",
           "PROMPT_TOOLKIT_NO_CPR": "1"}  # pexpect never answers the cursor-position query
    child = pexpect.spawn(sys.executable, ["-m", "leaf_cli", "chat", *args], cwd=str(repo), env=env,
                          encoding="utf-8", timeout=30, dimensions=(40, 120))
    child.expect(PROMPT)
    return child


def _say(child: pexpect.spawn, text: str) -> None:
    child.send(text + "\r")


def _only_run(repo: Path) -> object:
    runs = list_runs(repo)
    assert len(runs) == 1, "the whole chat is one run"
    return runs[0]


def test_messages_continue_one_conversation(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl",
                  turn(call("Bash", command="echo hello-from-tool")),
                  {"content": "first answer"},
                  {"content": "second answer"})
    child = _spawn(git_repo, "--model", spec)
    child.send("line one\x1b\rline two\r")  # Esc Enter: a new line; Enter sends
    child.expect("Allow Bash")
    child.sendline("a")
    child.expect(r"Bash\(echo hello-from-tool\)")  # the tool call in the live view
    child.expect("first answer")
    child.expect("final_answer")
    child.expect(PROMPT)
    _say(child, "follow up")
    child.expect("second answer")
    child.expect(PROMPT)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    run = _only_run(git_repo)
    folder = Path(os.environ["LEAF_HOME"]) / "runs" / run.run_id
    second = load(folder / "chat-002.jsonl")
    assert [m.content for m in second.messages if m.role in ("user", "assistant")] == [
        "line one\nline two", "", "first answer", "follow up", "second answer"]
    assert second.messages[3].content.startswith("Exit code: 0\nSTDOUT:\nhello-from-tool")
    assert second.task == "follow up" and len(second.turns) == 1 and second.exit_reason == "final_answer"
    assert Path(run.trajectory) == folder / "chat-002.jsonl"
    _code, more = fix_json(git_repo, script(tmp_path / "c.jsonl", {"content": "third answer"}), "--continue", "and then")
    assert [m["content"] for m in more["messages"][-4:]] == ["follow up", "second answer", "and then", "third answer"]
    history = (Path(os.environ["LEAF_HOME"]) / "chat_history").read_text()
    assert "+line one\n+line two" in history and "+follow up" in history


SLEEP = f"sleep 30.{os.getpid()}"
"""A duration no other process uses: other sessions on a shared machine may run this very test at once."""


def _sleeping() -> bool:
    """Whether the tool's sleep runs (Bash tools have their own session, or the sandbox's: look at every process)."""
    return any(line.strip() == SLEEP for line in os.popen("ps -eo args").read().splitlines())


def test_ctrl_c_stops_the_turn_not_the_chat(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl",
                  turn(call("Bash", command=f"{SLEEP}; echo late > late.txt")),
                  {"content": "carrying on"})
    child = _spawn(git_repo, "--model", spec, "--mode", "yolo")
    _say(child, "wait for it")
    deadline = time.monotonic() + 20
    while not _sleeping() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleeping()
    pressed = time.monotonic()
    child.sendcontrol("c")
    child.expect("interrupted", timeout=5)
    child.expect(PROMPT, timeout=5)
    assert time.monotonic() - pressed < 5
    assert not _sleeping()  # the tool's whole process group is gone
    _say(child, "go on")
    child.expect("carrying on")
    child.expect(PROMPT)
    child.sendcontrol("c")
    child.expect("Ctrl-C again")
    child.expect(PROMPT)  # a press before the prompt is back is dropped, never half-handled
    child.sendcontrol("c")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert not (git_repo / "late.txt").exists()
    run = _only_run(git_repo)
    first = load(Path(run.trajectory).with_name("chat-001.jsonl"))
    assert first.exit_reason == "interrupted"
    second = load(Path(run.trajectory))
    roles = [(m.role, m.content) for m in second.messages[1:]]
    assert roles == [("user", "wait for it"), ("assistant", ""),
                     ("tool", "KeyboardInterrupt: the user stopped this call"), ("user", "go on"),
                     ("assistant", "carrying on")]


def test_diff_undo_help_then_review_keeps(git_repo: Path, tmp_path: Path) -> None:
    edit = call("Edit", file_path="calc.py", old_string="a - b", new_string="a + b")
    spec = script(tmp_path / "s.jsonl", turn(edit), {"content": "fixed"}, turn(edit), {"content": "fixed again"})
    child = _spawn(git_repo, "--model", spec, "--mode", "auto-edit")
    _say(child, "fix add")
    child.expect("fixed")
    child.expect(PROMPT)
    _say(child, "/diff")
    child.expect(r"\+    return a \+ b")
    child.expect(PROMPT)
    _say(child, "/undo")
    child.expect("Undone")
    child.expect(PROMPT)
    assert "a - b" in (git_repo / "calc.py").read_text()
    _say(child, "/diff")
    child.expect("No changes")
    child.expect(PROMPT)
    _say(child, "/help")
    child.expect("/undo")
    child.expect(PROMPT)
    _say(child, "/nope")
    child.expect("unknown command /nope")
    child.expect(PROMPT)
    _say(child, "again please")
    child.expect("fixed again")
    child.expect(PROMPT)
    _say(child, "/exit")
    child.expect("Keep the changes")
    child.sendline("k")
    child.expect("Kept")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "a + b" in (git_repo / "calc.py").read_text()
    run = _only_run(git_repo)
    told = load(Path(run.trajectory)).messages
    assert told[-4].role == "user" and "undid every change" in told[-4].content  # the model learns of /undo
    result = leaf("undo", "--workdir", str(git_repo))
    assert result.exit_code == 0, result.stderr
    assert "a - b" in (git_repo / "calc.py").read_text()


def test_chat_needs_a_terminal(git_repo: Path) -> None:
    result = leaf("chat", "--workdir", str(git_repo), "--model", "replay:x")
    assert result.exit_code == 2 and "needs a terminal" in result.stderr


def test_settle_answers_cut_off_calls_and_drops_a_torn_token_log() -> None:
    from leaf_cli.cli.chat import settle
    from leaf_cli.llm.messages import Conversation, Message, TokenLog, ToolCall

    calls = [ToolCall(id="a", name="Bash", arguments={"command": "true"}), ToolCall(id="b", name="Read")]
    conv = Conversation(messages=[Message(role="system"), Message(role="user", content="go"),
                                  Message(role="assistant", tool_calls=calls),
                                  Message(role="tool", content="Exit code: 0", tool_call_id="a", name="Bash")],
                        token_log=TokenLog(ids=[1, 2, 3], mask=[0, 1, 1], logprobs=[0.0] * 3, versions=[-1, 0, 0]),
                        rendered_messages=3)
    settle(conv)
    assert [(m.role, m.tool_call_id) for m in conv.messages[3:]] == [("tool", "a"), ("tool", "b")]
    assert conv.messages[-1].content.startswith("KeyboardInterrupt") and conv.token_log is not None  # log intact
    conv.token_log.append_prompt([4])  # interrupted between the engine's prompt and sampled appends
    settle(conv)
    assert conv.token_log is None and conv.rendered_messages == 0


@pytest.mark.llama
def test_the_next_message_reuses_the_llama_token_cache(git_repo: Path, smollm2_path: Path) -> None:
    """Two messages in one chat on the real runtime: the second's first turn evaluates only its new tokens."""
    from leaf_cli.cli.chat import ChatSession
    from leaf_cli.cli.fix_session import make_engine_for
    from leaf_cli.config import load_settings

    settings, _ = load_settings({"model": "smollm2-135m", "max_turns": 1, "quiet": True}, git_repo)
    session = ChatSession(git_repo, git_repo, settings, make_engine_for(settings), yes=True)
    session.send("Say hello.")
    session.send("Now say goodbye.")
    run = list_runs(git_repo)[0]
    first, second = (load(Path(run.trajectory).with_name(f"chat-00{i}.jsonl")) for i in (1, 2))
    before, now = first.turns[-1].usage, second.turns[0].usage
    assert now.cached_tokens == before.prompt_tokens + before.completion_tokens - 1 > 0
    assert second.token_log is not None and second.token_log.ids[:len(first.token_log.ids)] == first.token_log.ids


def test_a_spinner_shows_while_the_model_loads_and_before_each_reply(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl", {"content": "first answer"}, {"content": "second answer"})
    home = git_repo.parent / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "COLUMNS": "120", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
    child = pexpect.spawn(sys.executable, ["-m", "leaf_cli", "chat", "--model", spec], cwd=str(git_repo), env=env,
                          encoding="utf-8", timeout=30, dimensions=(40, 120))
    child.expect("loading the model")
    child.expect(PROMPT)
    _say(child, "hello")
    child.expect("waiting for the model")
    child.expect("first answer")
    child.expect(PROMPT)
    _say(child, "again")  # every message has its phase line, not only the first
    child.expect("waiting for the model")
    child.expect("second answer")
    child.expect(PROMPT)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
