"""The docs as a new user follows them: the example task file runs, and every documented flag exists.

The example task (docs/examples/tasks.jsonl) ships its repository as a git bundle beside it, so these run
the real path: the cached environment build (pip installs pytest), the workspace, the tools in the sandbox,
the patch and grading.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator

import pytest
import typer
from typer.testing import CliRunner

from leaf_cli.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
DOCS = [ROOT / "README.md", ROOT / "training" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
runner = CliRunner()
OTHER_PROGRAMS = {"--no-cache-dir": "pip", "--no-mtp": "llama.cpp's convert_hf_to_gguf.py",
                  "--max-num-seqs": "vllm serve", "--reject": "git apply", "--no-header": "pytest",
                  **dict.fromkeys(("--shape", "--threads", "--gguf", "--steps", "--sweep-tokens", "--sweep-repeats"),
                                  "bench/bench_4b.py")}
"""Flags the docs name alone in prose that belong to another program, each with the program."""


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One environment build for the module, in a folder of its own."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEAF_CACHE_DIR", str(tmp_path_factory.mktemp("leaf-cache")))
        yield


def _leaf(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stderr


def _results(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _replay(path: Path, *turns: dict) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return path


def _edit(new: str) -> dict:
    return {"content": "", "tool_calls": [{"name": "Edit", "arguments": {
        "file_path": "calc.py", "old_string": "def add(a, b):\n    return a - b", "new_string": new}}]}


def test_example_task_file_is_valid_gold_resolves_and_empty_does_not(tmp_path: Path) -> None:
    checked = runner.invoke(app, ["tasks", "check", str(EXAMPLES / "tasks.jsonl")])
    assert checked.exit_code == 0 and "1 task(s), 0 malformed line(s)" in checked.output
    gold = _leaf("eval", "grade", "--gold", "--tasks", str(EXAMPLES / "tasks.jsonl"), "--out", str(tmp_path / "g"))
    assert "calc__add-subtracts #0: resolved" in gold
    empty = _leaf("eval", "grade", "--empty", "--tasks", str(EXAMPLES / "tasks.jsonl"), "--out", str(tmp_path / "e"))
    assert "calc__add-subtracts #0: unresolved: empty patch" in empty
    assert _results(tmp_path / "e")[0]["reason"] == "empty patch"


def test_the_documented_replay_run_resolves_the_example(tmp_path: Path) -> None:
    shown = _leaf("eval", "run", str(EXAMPLES / "tasks.jsonl"), "--model",
                  f"replay:{EXAMPLES / 'fix-calc.replay.jsonl'}", "--out", str(tmp_path / "run"))
    assert "calc__add-subtracts #0: resolved" in shown
    (result,) = _results(tmp_path / "run")
    assert result["resolved"] and result["exit_reason"] == "final_answer" and result["steps"] == 4


def test_an_unresolved_attempt_says_which_tests_failed(tmp_path: Path) -> None:
    wrong = _replay(tmp_path / "wrong.jsonl", _edit("def add(a, b):\n    return a * b"), {"content": "Done."})
    shown = _leaf("eval", "run", str(EXAMPLES / "tasks.jsonl"), "--model", f"replay:{wrong}",
                  "--out", str(tmp_path / "run"))
    assert "calc__add-subtracts #0: unresolved: tests failed: test_add" in shown
    assert _results(tmp_path / "run")[0]["reason"] == "tests failed: test_add"


def test_a_local_tasks_agent_time_caps_the_run(tmp_path: Path) -> None:
    """timeouts.agent_s is the episode's limit for every kind of task, not only Harbor's."""
    task = json.loads((EXAMPLES / "tasks.jsonl").read_text())
    task["timeouts"]["agent_s"] = 2
    task["repo"] = str(EXAMPLES / "calc.bundle")  # the same environment as the other tests: built once
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    sleep = {"content": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 1.5"}}]}
    slow = _replay(tmp_path / "slow.jsonl", sleep, sleep, sleep, _edit("def add(a, b):\n    return a + b"),
                   {"content": "Done."})
    _leaf("eval", "run", str(tmp_path / "tasks.jsonl"), "--model", f"replay:{slow}", "--max-time", "600",
          "--out", str(tmp_path / "run"))
    (result,) = _results(tmp_path / "run")
    assert result["exit_reason"] == "max_time" and result["steps"] < 4, result
    assert result["reason"] == "timeout: the agent's time ran out with no change"


# --- every flag the docs name exists -------------------------------------------------------------------

def _commands() -> dict[tuple[str, ...], str]:
    """Each command path of `leaf` -> its --help text."""
    found: dict[tuple[str, ...], str] = {}

    def walk(command: object, path: tuple[str, ...]) -> None:
        found[path] = runner.invoke(app, [*path, "--help"]).stdout
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, path + (name,))

    walk(typer.main.get_command(app), ())
    return found


def _documented_invocations() -> list[tuple[str, str]]:
    """(doc file, `leaf …` invocation) for every code span and code-block line that runs leaf."""
    spans: list[tuple[str, str]] = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
        inline = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
        lines = [line for block in blocks for line in block.replace("\\\n", " ").splitlines()] + inline
        for line in lines:
            for part in re.split(r"\||&&|;", line):
                part = part.split("#", 1)[0].strip()
                if re.match(r"^(leaf|python -m leaf_cli) ", part):
                    spans.append((doc.name, part))
    return spans


def test_every_flag_the_docs_name_exists() -> None:
    commands = _commands()
    invocations = _documented_invocations()
    assert len(invocations) > 40  # the walk finds the docs' commands at all
    missing = []
    for doc, line in invocations:
        words = line.split()[1:] if line.startswith("leaf ") else line.split()[3:]
        path: tuple[str, ...] = ()
        for word in words:
            if path + (word,) in commands:
                path += (word,)
            elif not word.startswith("-"):
                break
        if path and path[0] == "train" and len(path) > 1:
            continue  # the stages' flags live in leaf_train (each stage's --help)
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line):
            if flag not in commands[path]:
                missing.append(f"{doc}: `{line}`: {flag} is not an option of `leaf {' '.join(path)}`")
    every_option = "\n".join(commands.values())
    for doc in DOCS:  # a flag named alone in prose (`--max-time`) is some command's option
        for span in re.findall(r"`(--[a-z][a-z0-9-]*)(?: [A-Z]+)?`", doc.read_text(encoding="utf-8")):
            if span not in OTHER_PROGRAMS and not re.search(rf"(?<![\w-]){re.escape(span)}(?![\w-])", every_option):
                missing.append(f"{doc.name}: `{span}` is not an option of any leaf command")
    assert not missing, "\n".join(missing)
