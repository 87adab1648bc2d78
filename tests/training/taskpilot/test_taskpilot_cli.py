"""`leaf train synth` argument handling: bad input is one clear line and exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_train.taskpilot.cli import main


@pytest.mark.parametrize("argv, message", [
    ([], "give at least one --source"),
    (["--source", "pypi:toolz", "--out", "{out}"], "bad source 'pypi:toolz'"),
    (["--source", "x", "--band", "0.9,0.1", "--out", "{out}"], "band must satisfy"),
    (["--source", "x", "--generator", "llm", "--out", "{out}"], "needs --generator-url"),
    (["--source", "x", "--policy", "magic:1", "--out", "{out}"], "unknown policy"),
    (["--config", "{out}/missing.yaml"], "config file not found"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    args = [a.replace("{out}", str(tmp_path / "run")) for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("leaf: error: ") and message in err[0]
    assert not (tmp_path / "run" / "tasks.jsonl").exists()


def test_help_lists_the_issue_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--source", "--generator", "--target", "--policy", "--rollouts", "--band", "--workers", "--out", "--config"):
        assert option in out
