"""The whole funnel end to end: snapshots, generation, validation, calibration with a SCRIPTED policy
(an oracle that applies the gold patch with a per-specificity probability through the real harness; not
a model), refinement, tasks.jsonl that the eval machinery grades, the report, and resume after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from leaf_cli.tasks import grade, load_tasks, make_sandbox
from leaf_train.taskpilot import pipeline, report
from leaf_train.taskpilot.config import SynthConfig
from leaf_train.taskpilot.store import read_jsonl

PYPI_SOURCE = "pypi:toolz==1.0.0"
PYPI_TESTS = ["toolz/tests/test_itertoolz.py"]


def _grade_all(tasks_path: Path, gold: bool) -> dict[str, bool]:
    """Each task graded by the eval machinery with its gold patch (or the empty one): id -> resolved."""
    tasks = load_tasks(tasks_path)
    assert not tasks.errors
    sandbox = make_sandbox(None)
    return {t.instance_id: grade(t, t.patch if gold else "", sandbox, base_dir=tasks.base_dir).resolved
            for t in tasks.tasks}


@pytest.fixture(scope="module")
def pypi_run(session_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pypi-run")
    cfg = SynthConfig(sources=[PYPI_SOURCE], tests=PYPI_TESTS, target=2, rollouts=2, band=(0.2, 0.8), workers=2,
                      max_candidates=8, out=out, cache_dir=session_cache, policy="scripted:0,0.2,0.5,0.9,1")
    ctx = pipeline.run(cfg)  # any failure fails the test: the download's own is recorded per snapshot
    snaps = read_jsonl(out / "snapshots.jsonl")
    if snaps and snaps[0]["status"] == "skipped" and "download" in (snaps[0]["reason"] or ""):
        pytest.skip(f"cannot download {PYPI_SOURCE}: {snaps[0]['reason']}")
    assert ctx.snapshots
    report.write(out)
    return out


@pytest.mark.slow
def test_pypi_funnel_produces_gradeable_calibrated_tasks(pypi_run: Path) -> None:
    tasks = load_tasks(pypi_run / "tasks.jsonl").tasks
    assert len(tasks) >= 2
    for task in tasks:
        assert task.instance_id.startswith("toolz__toolz-1.0.0.")
        assert task.FAIL_TO_PASS and task.PASS_TO_PASS and not set(task.FAIL_TO_PASS) & set(task.PASS_TO_PASS)
        assert task.validation["gold_resolved"] == task.validation["gold_runs"] == 3
        assert 0.2 <= task.meta["p_hat"] <= 0.8 and task.source["sdist_filename"] == "toolz-1.0.0.tar.gz"
        assert not Path(task.repo).is_absolute() or Path(task.repo).exists()
    assert all(_grade_all(pypi_run / "tasks.jsonl", gold=True).values())
    assert not any(_grade_all(pypi_run / "tasks.jsonl", gold=False).values())


@pytest.mark.slow
def test_pypi_report_counts_the_funnel_and_draws_the_histograms(pypi_run: Path) -> None:
    data = json.loads((pypi_run / "report.json").read_text())
    decisions = read_jsonl(pypi_run / "decisions.jsonl")
    f = data["funnel"]
    assert f["generated"] == len(decisions) >= f["executable"] >= f["in_band"] >= 2
    assert sum(data["drop_reasons"].values()) == f["generated"] - f["in_band"]
    assert len(data["p_hat_before"]) == len(data["p_hat_after"]) == f["executable"]
    assert (pypi_run / "phat_hist.png").stat().st_size > 1000
    assert "funnel: generated" in (pypi_run / "report.txt").read_text()
    for cal in read_jsonl(pypi_run / "calibration.jsonl"):
        assert cal["rollouts"] == 2 and cal["ci_low"] <= cal["p_hat"] <= cal["ci_high"]


@pytest.mark.slow
def test_f2p_tests_are_hidden_from_the_solver_and_restored_for_grading(pypi_run: Path, tmp_path: Path) -> None:
    """Procedural F2P are existing tests: their files are removed from the solver's copy (one pytest run
    would otherwise localize the bug whatever the statement says) and restored by the grader."""
    from leaf_cli.tasks import make_attempt_workspace

    tasks = load_tasks(pypi_run / "tasks.jsonl")
    for task in tasks.tasks:
        files = sorted({t.split("::")[0] for t in task.FAIL_TO_PASS})
        assert task.hidden_paths == files
        ws = make_attempt_workspace(task, tmp_path / task.instance_id, tasks.base_dir)
        assert not any((ws.root / f).exists() for f in files), files
        assert (ws.root / "toolz").is_dir()  # the package itself is there
        assert grade(task, task.patch, make_sandbox(None), base_dir=tasks.base_dir).resolved
    for line in read_jsonl(pypi_run / "calibration.jsonl"):
        assert line["rollouts"] == 2  # calibration ran on the hidden tasks too (pipeline passes hidden_paths)


def _synth_cmd(repo: Path, out: Path, cache: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "leaf_cli", "train", "synth", "--source", str(repo), "--target", "3",
            "--rollouts", "2", "--band", "0.2,0.8", "--out", str(out), "--max-candidates", "12", *extra]


@pytest.mark.slow
def test_a_killed_run_resumes_where_it_stopped(mathx_repo: Path, session_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    (tmp_path / "c.yaml").write_text(f"cache_dir: {session_cache}\npolicy: 'scripted:0,0.2,0.5,0.9,1'\n")
    cmd = _synth_cmd(mathx_repo, out, session_cache, "--config", str(tmp_path / "c.yaml"))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(read_jsonl(out / "calibration.jsonl")) < 1:
        time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = read_jsonl(out / "validated.jsonl")
    assert before, "the run was killed before validating anything"
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    validated = read_jsonl(out / "validated.jsonl")
    assert validated[: len(before)] == before
    assert max(Counter(v["code_key"] for v in validated).values()) == 1  # nothing validated twice
    decisions = read_jsonl(out / "decisions.jsonl")
    assert max(Counter(d["root"] for d in decisions).values()) == 1
    accepted = [d for d in decisions if d["accepted"]]
    assert len(read_jsonl(out / "tasks.jsonl")) == len(accepted)
    assert "funnel: generated" in done.stderr


@pytest.mark.slow
def test_combine_merges_validated_bugs_and_duplicates_are_dropped(mathx_repo: Path, session_cache: Path,
                                                                   tmp_path: Path) -> None:
    cfg = SynthConfig(sources=[str(mathx_repo)], generator="combine", target=1, rollouts=2, band=(0.0, 1.0),
                      max_candidates=2, out=tmp_path / "run", cache_dir=session_cache)
    ctx = pipeline.run(cfg)
    tasks = load_tasks(tmp_path / "run" / "tasks.jsonl").tasks
    assert len(tasks) == 1 and tasks[0].bug_type.startswith("combine_")
    assert len(tasks[0].meta["components"]) == 2
    assert all(_grade_all(tmp_path / "run" / "tasks.jsonl", gold=True).values())
    root = ctx.store.candidates[ctx.store.decisions[next(iter(ctx.store.decisions))].root]
    twin = root.model_copy(update={"id": "twin-of-" + root.id, "meta": {**root.meta, "covering_tests": []},
                                   "bug_patch": root.bug_patch + "\n"})
    assert pipeline.process(ctx, twin).reason == "duplicate"
