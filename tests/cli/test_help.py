"""Every command's help, as a new user reads it: `-h` works, no placeholder metavars, real examples.

The walk goes over the click command tree typer builds, so a command added later is checked too.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from leaf_cli.cli.main import app

runner = CliRunner()

# The commands a new user starts from: each shows two or three real invocations.
MAIN_COMMANDS = [("fix",), ("chat",), ("replay",), ("runs",), ("undo",), ("doctor",), ("models", "pull"),
                 ("models", "add"), ("eval", "run"), ("eval", "grade"), ("train",)]


def _walk(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in getattr(command, "commands", {}).items():  # a group (typer vendors its own click)
        found += _walk(sub, path + (name,))
    return found


# train's stages pass every argument, --help included, through to leaf_train, whose own tests check their help.
ALL_COMMANDS = [p for p in _walk(typer.main.get_command(app)) if not (p[:1] == ("train",) and len(p) > 1)]


def _help(path: tuple[str, ...], flag: str = "-h") -> str:
    result = runner.invoke(app, [*path, flag])
    assert result.exit_code == 0, (path, result.output)
    return result.stdout


@pytest.mark.parametrize("path", ALL_COMMANDS, ids=lambda p: " ".join(p) or "leaf")
def test_every_command_takes_dash_h_and_shows_no_placeholder(path: tuple[str, ...]) -> None:
    text = _help(path)
    assert text == _help(path, "--help")
    assert "Usage: " in text
    # typer's own placeholders (`<int range>`, `<path>`, `{path}`) read as template syntax, not as a value.
    assert not re.search(r"<(int|float|str|path|list)[^>]*>", text), text
    assert not re.search(r"\{[a-z_]+\}", text), text


@pytest.mark.parametrize("path", MAIN_COMMANDS, ids=" ".join)
def test_main_commands_show_examples_that_parse(path: tuple[str, ...]) -> None:
    text = _help(path)
    examples = text.split("Examples:", 1)[1].strip().splitlines() if "Examples:" in text else []
    lines = [line.strip() for line in examples if line.strip().startswith(("leaf ", "gh "))]
    assert 2 <= len(lines) <= 3, text
    for line in lines:
        argv = shlex.split(line.split("| ", 1)[-1])
        assert argv[0] == "leaf" and tuple(argv[1:1 + len(path)]) == path, line
        # Every option of the example exists: an unknown one fails parsing before --help is honoured.
        checked = runner.invoke(app, [*argv[1:], "--help"])
        assert checked.exit_code == 0, (line, checked.output)


def test_shell_completion_is_offered() -> None:
    text = _help(())
    assert "--install-completion" in text and "--show-completion" in text
    shown = subprocess.run([sys.executable, "-m", "leaf_cli", "--show-completion", "bash"], capture_output=True,
                           text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1",
                                                       **_pythonpath()})
    assert shown.returncode == 0, shown.stderr
    assert "complete" in shown.stdout and "leaf" in shown.stdout


def _pythonpath() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "HOME", "VIRTUAL_ENV")}


def test_models_add_takes_its_name_from_the_file(tmp_path: Path) -> None:
    from tests.support.fake_hub import tiny_gguf

    gguf = tmp_path / "Qwen3.5 4B-Q4_K_M.gguf"
    gguf.write_bytes(tiny_gguf(arch="qwen35", context=4096))
    result = runner.invoke(app, ["models", "add", str(gguf)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("added qwen3.5-4b-q4_k_m:")
    assert runner.invoke(app, ["models", "rm", "qwen3.5-4b-q4_k_m"]).exit_code == 0
