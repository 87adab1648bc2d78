"""The error tree: bad input exits 2, an infrastructure failure exits 1, and eval labels it by its kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from leaf_cli.cli.common import user_errors
from leaf_cli.errors import InfraError, LeafError, UsageError
from leaf_cli.tasks import EvalConfig, load_tasks, make_sandbox, run_eval

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "tasks.jsonl"


@pytest.mark.parametrize(("error", "code"), [(LeafError("bad path"), 2), (UsageError("bad path"), 2),
                                             (InfraError("bwrap did not start", "sandbox"), 1)])
def test_the_cli_prints_one_line_with_the_errors_exit_status(error: LeafError, code: int) -> None:
    app = typer.Typer()

    @app.command()
    @user_errors
    def boom() -> None:
        raise error

    result = CliRunner().invoke(app, [])
    assert result.exit_code == code
    assert result.stderr == f"leaf: error: {error}\n"


def test_an_infrastructure_failure_in_an_attempt_keeps_its_label_and_grader(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAF_CACHE_DIR", str(tmp_path / "cache"))
    tasks = load_tasks(EXAMPLE)

    def lost_engine():  # noqa: ANN202 - what an executor raises when the worker holding the model is gone
        raise InfraError("its Ray worker was lost 3 time(s): node died", "worker_lost")

    config = EvalConfig(out=tmp_path / "out", sandbox=make_sandbox("subprocess"), model_name="m",
                        base_dir=tasks.base_dir)
    run_eval(tasks.tasks, lost_engine, config)
    (line,) = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    result = json.loads(line)
    assert result["infra_failure"] == "worker_lost" and result["grader"] == "tests" and not result["resolved"]
    assert result["reason"].startswith("infrastructure: worker_lost (InfraError: its Ray worker was lost")
