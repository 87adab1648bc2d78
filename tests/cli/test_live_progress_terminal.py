"""`leaf fix` on a real terminal (pexpect) with the real llama.cpp engine on SmolLM2-135M: the model load and
the prompt's evaluation (tokens done / total) show before the first token, the status line gives prompt and
generation rates apart, AGENTS.md is named once; with --quiet or --json none of the live lines appear."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pexpect
import pytest

pytestmark = [pytest.mark.llama, pytest.mark.slow]  # three SmolLM2 runs on the CPU

TASK = "Say hello in one short sentence."
READING = r"reading the prompt · ([\d,]+)/([\d,]+) tokens"
STATUS = r"turn 1 · [\d,]+ in \(\d+ cached\) · [\d,]+ out · prompt [\d.,]+ tok/s · gen [\d.,]+ tok/s"


def _spawn(repo: Path, home: Path, *args: str) -> pexpect.spawn:
    env = {**os.environ, "HOME": str(home), "COLUMNS": "120", "TERM": "xterm"}
    return pexpect.spawn(sys.executable, ["-m", "leaf_cli", "fix", "--model", "smollm2-135m", "--temperature", "0",
                                          "--max-tokens", "24", "--max-turns", "1", *args, TASK],
                         cwd=str(repo), env=env, encoding="utf-8", timeout=240, dimensions=(40, 120))


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return home


def test_fix_shows_the_load_then_prompt_progress_then_separate_rates(git_repo: Path, smollm2_path: Path,
                                                                      tmp_path: Path) -> None:
    (git_repo / "AGENTS.md").write_text("Run the tests with pytest.\n")
    child = _spawn(git_repo, _home(tmp_path))
    child.expect("loading the model smollm2-135m")
    child.expect("using AGENTS.md")
    child.expect("waiting for the model")
    child.expect(READING)
    done, total = (int(g.replace(",", "")) for g in child.match.groups())
    assert 0 <= done < total and total > 100  # the first prompt: system prompt, tools, task, AGENTS.md
    before_first_token = child.before
    child.expect(STATUS)
    streamed = child.before
    child.expect(pexpect.EOF)
    child.close()
    assert "turn 1" not in before_first_token and "generating" not in before_first_token
    assert "generating · " in streamed or "read the prompt" in streamed
    assert child.before.count("using AGENTS.md") == 0  # said once


@pytest.mark.parametrize("flag", ["--quiet", "--json"])
def test_quiet_and_json_show_no_live_lines(git_repo: Path, smollm2_path: Path, tmp_path: Path, flag: str) -> None:
    child = _spawn(git_repo, _home(tmp_path), flag)
    child.expect(pexpect.EOF)
    child.close()
    shown = child.before
    for line in ("loading the model", "waiting for the model", "reading the prompt", "generating · "):
        assert line not in shown, shown[-2000:]
    if flag == "--json":
        start = shown.index('{"exit_reason"')
        assert json.loads(shown[start:].splitlines()[0])["exit_reason"]
    else:
        assert re.search(STATUS, shown), shown[-2000:]  # the turn's status line still closes each turn


def test_chat_shows_prompt_progress_for_every_message(git_repo: Path, smollm2_path: Path, tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(_home(tmp_path)), "COLUMNS": "120", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
    child = pexpect.spawn(sys.executable, ["-m", "leaf_cli", "chat", "--yes", "--model", "smollm2-135m", "--temperature",
                                           "0", "--max-tokens", "16", "--max-turns", "1"],
                          cwd=str(git_repo), env=env, encoding="utf-8", timeout=240, dimensions=(40, 120))
    child.expect("loading the model smollm2-135m")
    child.expect("›")
    totals = []
    for message in ("Say hello.", "Now say goodbye."):
        child.send(message + "\r")
        child.expect(READING)
        totals.append(int(child.match.group(2).replace(",", "")))
        child.expect(STATUS)
        child.expect("›")
    # The second message evaluates only its new tail: the first reply and the conversation are in the cache.
    assert totals[0] > 100 and 0 < totals[1] < totals[0]
    child.sendcontrol("d")
    child.expect(pexpect.EOF)


def test_the_live_line_leaves_nothing_on_the_screen(git_repo: Path, smollm2_path: Path, tmp_path: Path) -> None:
    """What the user sees after the run (tmux capture-pane: the rendered screen, not the byte stream): the
    reply, the status line and the summary; the transient live line is gone."""
    import shlex
    import shutil
    import subprocess
    import time

    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (apt-get install tmux)")
    session = f"leaf-live-{os.getpid()}"
    argv = [sys.executable, "-m", "leaf_cli", "fix", "--model", "smollm2-135m", "--temperature", "0",
            "--max-tokens", "24", "--max-turns", "1", TASK]
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in (("HOME", str(_home(tmp_path))), ("TERM", "xterm"),
                                                         ("PYTHONPATH", os.environ.get("PYTHONPATH", "")),
                                                         ("PATH", os.environ["PATH"])))
    command = f"cd {shlex.quote(str(git_repo))} && env {env} {shlex.join(argv)}; echo LEAF-EXITED; sleep 600"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "140", "-y", "40", command], check=True)
    try:
        screen, seen = "", set()
        deadline = time.monotonic() + 240
        while "LEAF-EXITED" not in screen and time.monotonic() < deadline:
            time.sleep(0.5)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout
            seen.update(p for p in ("reading the prompt", "generating · ") if p in screen)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    assert "LEAF-EXITED" in screen, screen
    assert "reading the prompt" in seen  # it was on the screen while the prompt was evaluated
    assert re.search(STATUS, screen) and "● " in screen
    for gone in ("reading the prompt", "waiting for the model", "generating · ", "loading the model"):
        assert gone not in screen, screen
