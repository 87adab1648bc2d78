"""The live view's lines: tool lines shortened where they cut least, a summary that never wraps, separate
prompt and generation rates, the phase line on a terminal and none elsewhere."""

from __future__ import annotations

import io
import re

from rich.console import Console

from leaf_cli.agent import events as ev
from leaf_cli.llm.messages import AssistantTurn, TurnUsage
from leaf_cli.ui.live import LiveView, shorten, summary, tool_line
from leaf_cli.ui.rates import TurnClock


def test_a_long_path_keeps_its_file_name_and_a_command_is_cut_at_a_space() -> None:
    path = "src/" + "very_long_directory_name/" * 6 + "module_with_a_name.py"
    line = tool_line("Read", {"file_path": path}, width=60)
    shown = line[len("Read("):-1]
    assert len(shown) <= 60 and shown.startswith("…/") and shown.endswith("/module_with_a_name.py")
    assert path.endswith(shown[1:])  # whole path components only
    command = "pytest -q tests/test_one.py tests/test_two.py tests/test_three.py tests/test_four.py"
    cut = shorten(command, 50)
    assert len(cut) <= 50 and cut.endswith("…") and command.startswith(cut[:-1])
    assert command[len(cut) - 1] == " "  # the cut falls between words
    assert shorten("short", 50) == "short"


def test_the_summary_is_one_line_at_80_columns_without_a_terminal() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, highlight=False)
    assert not console.is_terminal
    summary(console, turns=12, usage={"prompt_tokens": 123456, "completion_tokens": 7890}, seconds=754.0,
            exit_reason="final_answer", files_changed=3, insertions=120, deletions=45, run_id="20261202-010203-abcdef")
    text = out.getvalue()
    assert text.count("\n") == 1 and len(text) > 80 and "run 20261202-010203-abcdef" in text


def test_the_summary_counts_one_file_and_one_turn_in_the_singular() -> None:
    out = io.StringIO()
    summary(Console(file=out, width=200, highlight=False), turns=1, usage={}, seconds=3.0, exit_reason="final_answer",
            files_changed=1, insertions=1, deletions=1, run_id="r")
    assert " 1 turn · " in out.getvalue() and " 1 file changed " in out.getvalue()
    assert "files changed" not in out.getvalue() and "turns" not in out.getvalue()


def _turn(prompt: int, cached: int, out: int, seconds: float) -> AssistantTurn:
    return AssistantTurn(content="x", usage=TurnUsage(prompt_tokens=prompt, cached_tokens=cached, completion_tokens=out),
                         seconds=seconds)


def test_rates_split_the_prompt_from_the_generation() -> None:
    clock = TurnClock(started=0.0)
    clock.prefill(0, 1000, now=1.0)
    clock.prefill(1000, 1000, now=11.0)  # 1,000 tokens in 10 s
    for step in range(20):
        clock.delta(now=11.0 + step * 0.1)
    assert clock.prompt_rate() == 100.0
    assert clock.generation_rate(40, now=13.0) == 20.0  # 40 tokens in the 2 s after the prompt
    # The old line divided by the whole turn: 40 / 13 s = 3.1 tok/s, for a model generating at 20.
    server = TurnClock(started=0.0)  # no progress reports: the first text marks the prompt's end
    server.delta(now=2.0)
    assert server.prompt_rate(evaluated=500) == 250.0 and server.generation_rate(30, now=5.0) == 10.0


def _events(view: LiveView) -> None:
    view(ev.TurnStarted(0))
    view(ev.PrefillProgress(0, 700))
    view(ev.PrefillProgress(512, 700))
    view(ev.PrefillProgress(700, 700))
    for piece in ("Hello", " there", "\nsecond", " line"):
        view(ev.TextDelta("content", piece))
    view(ev.TurnFinished(0, _turn(700, 0, 4, 1.0)))


def test_on_a_terminal_the_phase_line_shows_prompt_progress_then_rates() -> None:
    out = io.StringIO()
    view = LiveView(Console(file=out, force_terminal=True, width=120, highlight=False))
    assert view.progress
    _events(view)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert "waiting for the model" in text and "reading the prompt · 512/700 tokens" in text
    assert re.search(r"generating · \d+ tokens", text)
    assert "Hello there" in text and "second line" in text
    assert re.search(r"turn 1 · 700 in \(0 cached\) · 4 out · prompt [\d.,–]+ tok/s · gen [\d.,–]+ tok/s", text)


def test_without_a_terminal_or_with_quiet_no_phase_line() -> None:
    for console, quiet in ((Console(file=io.StringIO(), width=120), False),
                           (Console(file=io.StringIO(), force_terminal=True, width=120), True)):
        view = LiveView(console, quiet=quiet)
        assert not view.progress
        _events(view)
        text = console.file.getvalue()
        assert "reading the prompt" not in text and "waiting for the model" not in text and "generating" not in text
        assert "Hello there\nsecond line\n" in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
        assert "prompt " in text and " tok/s · gen " in text
