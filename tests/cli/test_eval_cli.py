"""`leaf eval run | grade | compare` and `leaf tasks` on real toolz tasks, with the replay engine as model.

The replay script stands in for a model (no model can solve tasks here): it applies the fix with Edit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from leaf_cli.cli import eval as eval_cli
from leaf_cli.cli import tasks as tasks_cli
from tests.tasks.conftest import SECOND_BUG, SECOND_OK, toolz_sdist, toolz_tasks, leaf_cache  # noqa: F401

APP_CODE = ("import typer\nfrom leaf_cli.cli import eval as e, tasks as t\n"
            "app = typer.Typer()\ne.register(app)\nt.register(app)\napp()\n")


@pytest.fixture()
def app() -> typer.Typer:
    app = typer.Typer()
    eval_cli.register(app)
    tasks_cli.register(app)
    return app


def _script(path: Path, turns: list[dict]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path


def _fix_turns(extra_first: list[dict] | None = None) -> list[dict]:
    edit = {"name": "Edit", "arguments": {"file_path": "toolz/itertoolz.py", "old_string": SECOND_BUG,
                                          "new_string": SECOND_OK}}
    return [*(extra_first or []), {"content": "Fixing second().", "tool_calls": [edit]},
            {"content": "second() skipped two elements; it now skips one."}]


def _second_only(toolz_tasks, tmp_path: Path) -> Path:  # noqa: ANN001
    path, tasks = toolz_tasks
    lines = [t.to_json() for t in tasks if t.instance_id.endswith(".second")]
    out = path.parent / f"second-{tmp_path.name}.jsonl"
    out.write_text("\n".join(lines) + "\n{not json\n", encoding="utf-8")
    return out


def _results(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_eval_run_with_replay_agent(app, toolz_tasks, tmp_path: Path) -> None:
    tasks = _second_only(toolz_tasks, tmp_path)
    script = _script(tmp_path / "fix.jsonl", _fix_turns())
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "run", str(tasks), "--model", f"replay:{script}", "--attempts", "2",
                                      "--workers", "2", "--out", str(out), "--sandbox", "subprocess"])
    assert result.exit_code == 0, result.output
    assert "line 2" in result.output or ":2:" in result.output  # the malformed line, reported
    rows = _results(out)
    assert sorted(r["attempt"] for r in rows) == [0, 1]
    assert all(r["resolved"] and r["exit_reason"] == "final_answer" and r["steps"] == 2 for r in rows)
    assert all(Path(r["traj_path"]).is_file() for r in rows)
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert {p["model_name_or_path"] for p in preds} == {f"replay:{script}"}
    assert all("-    next(seq)" in p["model_patch"] for p in preds)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_tasks"] == 1 and summary["n_attempts"] == 2 and summary["solve_rate"] == 1.0
    assert summary["pass_at_k"] == {"1": 1.0, "2": 1.0}
    # the graded output folder can be re-graded from its predictions
    regrade = CliRunner().invoke(app, ["eval", "grade", str(out / "predictions.jsonl"), "--tasks", str(tasks),
                                       "--out", str(tmp_path / "regrade"), "--sandbox", "subprocess"])
    assert regrade.exit_code == 0, regrade.output
    assert [r["resolved"] for r in _results(tmp_path / "regrade")] == [True, True]
    compare = CliRunner().invoke(app, ["eval", "compare", str(out), str(tmp_path / "regrade")])
    assert compare.exit_code == 0 and "+0.000" in compare.output


def test_agent_editing_tests_gets_no_credit(app, toolz_tasks, tmp_path: Path) -> None:
    """The agent rewrites the failing test instead of fixing the code: the change is cut from its patch."""
    tasks = _second_only(toolz_tasks, tmp_path)
    tamper = {"name": "Edit", "arguments": {"file_path": "toolz/tests/test_itertoolz.py",
                                            "old_string": "assert second('ABCDE') == 'B'", "new_string": "assert True"}}
    script = _script(tmp_path / "tamper.jsonl", [{"content": "", "tool_calls": [tamper]}, {"content": "done"}])
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "run", str(tasks), "--model", f"replay:{script}", "--out", str(out),
                                      "--sandbox", "subprocess"])
    assert result.exit_code == 0, result.output
    (row,) = _results(out)
    assert not row["resolved"] and row["protected_touched"] == ["toolz/tests/test_itertoolz.py"]
    assert json.loads((out / "predictions.jsonl").read_text())["model_patch"] == ""


def test_crash_then_resume(toolz_tasks, tmp_path: Path) -> None:
    """The second attempt's Bash kills the eval process (SIGKILL); --resume finishes without redoing work."""
    tasks = _second_only(toolz_tasks, tmp_path)
    counter = tmp_path / "count"
    crash = {"name": "Bash", "arguments": {"command": f"n=$(cat {counter} 2>/dev/null || echo 0); "
                                                      f"echo $((n+1)) > {counter}; [ $n = 1 ] && kill -9 $PPID; true"}}
    script = _script(tmp_path / "crash.jsonl", _fix_turns([{"content": "", "tool_calls": [crash]}]))
    out = tmp_path / "run"
    argv = [sys.executable, "-c", APP_CODE, "eval", "run", str(tasks), "--model", f"replay:{script}",
            "--attempts", "3", "--out", str(out), "--sandbox", "subprocess", "--run-id", "r1"]
    env = {**os.environ}
    first = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert first.returncode == -9, first.stderr
    assert len(_results(out)) == 1 and not (out / "summary.json").exists()
    again = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert again.returncode == 2 and "--resume" in again.stderr  # never silently overwrites
    resumed = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=300, env=env)
    assert resumed.returncode == 0, resumed.stderr
    rows = _results(out)
    assert sorted(r["attempt"] for r in rows) == [0, 1, 2] and all(r["resolved"] for r in rows)
    assert len((out / "predictions.jsonl").read_text().splitlines()) == 3
    assert json.loads((out / "summary.json").read_text())["n_attempts"] == 3


def test_grade_gold_and_empty_validate_the_task_file(app, toolz_tasks, tmp_path: Path) -> None:
    path, tasks = toolz_tasks
    gold = CliRunner().invoke(app, ["eval", "grade", "--gold", "--tasks", str(path), "--out", str(tmp_path / "g"),
                                    "--workers", "2", "--sandbox", "subprocess"])
    assert gold.exit_code == 0, gold.output
    summary = json.loads((tmp_path / "g" / "summary.json").read_text())
    assert summary["resolved"] == len(tasks) and summary["infra_failures"] == 0
    empty = CliRunner().invoke(app, ["eval", "grade", "--empty", "--tasks", str(path), "--out", str(tmp_path / "e"),
                                     "--sandbox", "subprocess"])
    assert empty.exit_code == 0, empty.output
    assert json.loads((tmp_path / "e" / "summary.json").read_text())["resolved"] == 0
    compare = CliRunner().invoke(app, ["eval", "compare", str(tmp_path / "g"), str(tmp_path / "e")])
    assert "+1.000" in compare.output and "over 3 shared tasks" in compare.output


def test_bad_input_gets_one_line(app, tmp_path: Path) -> None:
    missing = CliRunner().invoke(app, ["eval", "grade", "--gold", "--tasks", str(tmp_path / "nope.jsonl"),
                                       "--out", str(tmp_path / "o")])
    assert missing.exit_code == 2 and "task file not found" in missing.output
    both = CliRunner().invoke(app, ["eval", "grade", "--gold", "--empty", "--tasks", "x", "--out", "o"])
    assert both.exit_code == 2 and "exactly one" in both.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "a"}\n[]\n')
    check = CliRunner().invoke(app, ["tasks", "check", str(bad)])
    assert check.exit_code == 1 and "bad.jsonl:1" in check.output and "bad.jsonl:2" in check.output


def test_tasks_export_harbor(app, toolz_tasks, tmp_path: Path) -> None:
    path, tasks = toolz_tasks
    result = CliRunner().invoke(app, ["tasks", "export", str(path), "--harbor", str(tmp_path / "h")])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "h" / tasks[2].instance_id
    for rel in ("instruction.md", "task.toml", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh",
                "environment/testbed/toolz/itertoolz.py"):
        assert (folder / rel).is_file(), rel
    assert "/logs/verifier/reward.txt" in (folder / "tests" / "test.sh").read_text()
    assert "test_drop_many" in (folder / "tests" / "test.patch").read_text()
    assert "allow_internet = false" in (folder / "task.toml").read_text()


def _swebench_file(tmp_path: Path) -> Path:
    from leaf_cli.tasks import dump_tasks
    from leaf_cli.tasks.importers import import_swebench_rows
    from tests.tasks.importers.test_swebench import verified_row

    path = tmp_path / "verified.jsonl"
    dump_tasks(import_swebench_rows([verified_row()], dataset="verified"), path)
    return path


def test_image_tasks_without_docker_stop_at_once(app, tmp_path: Path) -> None:
    """A SWE-bench import under the paper's preset: no Docker daemon here, so one line says so and nothing
    runs (no attempt is recorded as unresolved)."""
    from leaf_cli.tasks.envs.image import docker_problem

    tasks = _swebench_file(tmp_path)
    script = _script(tmp_path / "s.jsonl", [{"content": "done"}])
    bwrap = CliRunner().invoke(app, ["eval", "run", str(tasks), "--model", f"replay:{script}", "--out",
                                     str(tmp_path / "b"), "--sandbox", "bwrap"])
    assert bwrap.exit_code == 2 and "run them with --sandbox docker" in bwrap.output
    if docker_problem() is None:
        pytest.skip("[no-docker] a Docker daemon answers here; the no-daemon message cannot be shown")
    for command in (["run", str(tasks), "--model", f"replay:{script}", "--preset", "swebench-verified"],
                    ["grade", "--gold", "--tasks", str(tasks)]):
        result = CliRunner().invoke(app, ["eval", *command, "--out", str(tmp_path / "o")])
        assert result.exit_code == 2, result.output
        assert "1 task(s) run inside their Docker images (e.g. django__django-11099" in result.output
        assert "Docker daemon" in result.output and "nothing was run" in result.output
        assert not (tmp_path / "o").exists()


def _r2e_fix_turns() -> list[dict]:
    edit = {"name": "file_editor", "arguments": {"command": "str_replace", "path": "toolz/itertoolz.py",
                                                 "old_str": SECOND_BUG, "new_str": SECOND_OK}}
    return [{"content": "", "tool_calls": [edit]},
            {"content": "", "tool_calls": [{"name": "finish", "arguments": {"command": "submit", "result": "fixed"}}]}]


def test_preset_and_r2e_harness(app, toolz_tasks, tmp_path: Path) -> None:
    """The preset's three attempts and limits with the R2E tool profile; the explicit --sandbox wins over the
    preset's docker. summary.json carries the paper's figure (mean over runs, its SE) and the turn-limit share."""
    tasks = _second_only(toolz_tasks, tmp_path)
    script = _script(tmp_path / "r2e.jsonl", _r2e_fix_turns())
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "run", str(tasks), "--model", f"replay:{script}", "--out", str(out),
                                      "--preset", "swebench-verified", "--harness", "r2e", "--sandbox", "subprocess"])
    assert result.exit_code == 0, result.output
    rows = _results(out)
    assert sorted(r["attempt"] for r in rows) == [0, 1, 2]
    assert all(r["resolved"] and r["harness"] == "r2e" and r["exit_reason"] == "final_answer" for r in rows)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["preset"] == "swebench-verified" and summary["harness"] == "r2e" and summary["sandbox"] == "subprocess"
    assert summary["paper_report"] == {"runs": 3, "n_tasks": 1, "run_solve_rates": {"0": 1.0, "1": 1.0, "2": 1.0},
                                       "mean_solve_rate": 1.0, "se_over_runs": 0.0}
    assert summary["turn_limit"] == {"episodes": 3, "turn_limit": 0, "turn_limit_share": 0.0}
    assert "mean of 3 run(s)" in result.output and "paper (swebench-verified)" in result.output
    traj = [json.loads(line) for line in Path(rows[0]["traj_path"]).read_text().splitlines()]
    assert any("file_editor" in json.dumps(record) for record in traj)


def test_turn_limit_share_in_the_summary(app, toolz_tasks, tmp_path: Path) -> None:
    """Under r2e a model that never calls finish runs to the turn limit; the table and summary say how often."""
    tasks = _second_only(toolz_tasks, tmp_path)
    view = {"name": "file_editor", "arguments": {"command": "view", "path": "toolz/itertoolz.py", "view_range": [1, 5]}}
    script = _script(tmp_path / "wander.jsonl", [{"content": "", "tool_calls": [view]}, {"content": "thinking"}])
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "run", str(tasks), "--model", f"replay:{script}", "--out", str(out),
                                      "--harness", "r2e", "--max-turns", "1", "--sandbox", "subprocess"])
    assert result.exit_code == 0, result.output
    (row,) = _results(out)
    assert row["exit_reason"] == "max_turns" and not row["resolved"]
    assert json.loads((out / "summary.json").read_text())["turn_limit"] == \
        {"episodes": 1, "turn_limit": 1, "turn_limit_share": 1.0}
    assert "hit the turn limit" in result.output
    bad = CliRunner().invoke(app, ["eval", "run", str(tasks), "--model", f"replay:{script}", "--out", str(tmp_path / "x"),
                                   "--harness", "swe-agent"])
    assert bad.exit_code == 2 and "choose one of: leaf, r2e" in bad.output


def test_grade_a_one_line_predictions_jsonl(app, toolz_tasks, tmp_path: Path) -> None:
    """One prediction on one line parses as a JSON object: it is a list of one, not a dict keyed by id."""
    path, tasks = toolz_tasks
    task = tasks[0]
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"instance_id": task.instance_id, "model_name_or_path": "m",
                                 "model_patch": task.patch}) + "\n")
    result = CliRunner().invoke(app, ["eval", "grade", str(preds), "--tasks", str(path), "--out", str(tmp_path / "o"),
                                      "--sandbox", "subprocess"])
    assert result.exit_code == 0, result.output
    graded = {r["instance_id"]: r["resolved"] for r in _results(tmp_path / "o")}
    assert graded[task.instance_id] is True
    keyed = tmp_path / "keyed.json"  # the dict keyed by instance id still reads as before
    keyed.write_text(json.dumps({task.instance_id: {"instance_id": task.instance_id, "model_patch": task.patch}}))
    assert eval_cli._read_predictions(keyed)[0] == {task.instance_id: [task.patch]}
