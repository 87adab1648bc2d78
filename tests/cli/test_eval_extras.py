"""`leaf eval import ...` through typer's CliRunner, on an eval group built here (the real one wires it too)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from leaf_cli.cli.eval_extras import register_extras
from leaf_cli.tasks import load_tasks

runner = CliRunner()


def app() -> typer.Typer:
    eval_app = typer.Typer()

    @eval_app.callback()
    def _group() -> None:
        """leaf eval"""

    register_extras(eval_app)
    return eval_app


def test_import_swebench_writes_a_task_file(tmp_path: Path) -> None:
    row = {"repo": "sympy/sympy", "instance_id": "sympy__sympy-20590", "base_commit": "cffd4e0f86fefd4802349a9f9b19ed70934ea354",
           "patch": "", "test_patch": "", "problem_statement": "Symbol instances have __dict__", "version": "1.7",
           "FAIL_TO_PASS": "[\"test_immutable\"]", "PASS_TO_PASS": "[]"}
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    result = runner.invoke(app(), ["import", "swebench", str(tmp_path / "rows.jsonl"), "--out", str(tmp_path / "t.jsonl")])
    assert result.exit_code == 0, result.output
    assert "wrote 1 SWE-bench tasks" in result.output
    [task] = load_tasks(tmp_path / "t.jsonl").tasks
    assert task.model_extra["image_name"] == "swebench/sweb.eval.x86_64.sympy_1776_sympy-20590:latest"


def test_import_errors_are_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app(), ["import", "harbor", str(tmp_path / "missing"), "--out", str(tmp_path / "t.jsonl")])
    assert result.exit_code == 2 and not (tmp_path / "t.jsonl").exists()
    result = runner.invoke(app(), ["import", "swebench", str(tmp_path), "--out", "x", "--dataset", "nope"])
    assert result.exit_code == 2
