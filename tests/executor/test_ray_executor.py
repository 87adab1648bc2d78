"""The Ray executor on a real local Ray cluster (2 CPUs, started once for this module): the same attempts,
validations and rollouts as the local executor, a worker killed mid-attempt retried, names that say which
task and attempt a Ray task is. The model is leaf's replay engine (no model can solve tasks here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from leaf_cli.cli import eval as eval_cli
from leaf_cli.executor import ExecutorConfig, Job, Needs, close_executors, make_executor
from tests.executor.helpers import Keeper, fails, task_facts
from tests.tasks.conftest import SECOND_BUG, SECOND_OK, leaf_cache, toolz_sdist, toolz_tasks  # noqa: F401
from tests.training.rl.conftest import tiny_model_dir  # noqa: F401

ray = pytest.importorskip("ray")

RAY = ExecutorConfig(kind="ray", max_infra_retries=2)


@pytest.fixture(scope="module")
def worker_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workers' own scratch root (their TMPDIR), a folder the driver never reads: whatever the driver
    needs must come back with a job's value, as on a cluster whose nodes share no disk."""
    return tmp_path_factory.mktemp("worker-tmp")


@pytest.fixture(scope="module")
def cluster(leaf_cache, worker_tmp: Path):  # noqa: ANN001, F811 - workers inherit LEAF_CACHE_DIR: one environment cache
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=128 << 20,
             namespace="leaf-tests", runtime_env={"env_vars": {"TMPDIR": str(worker_tmp)}})
    yield
    close_executors()
    ray.shutdown()


@pytest.fixture()
def app() -> typer.Typer:
    app = typer.Typer()
    eval_cli.register(app)
    return app


def _script(path: Path, first: list[dict] | None = None) -> Path:
    edit = {"name": "Edit", "arguments": {"file_path": "toolz/itertoolz.py", "old_string": SECOND_BUG,
                                          "new_string": SECOND_OK}}
    turns = [*(first or []), {"content": "Fixing second().", "tool_calls": [edit]}, {"content": "Done."}]
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path


def _eval(app, tasks: Path, script: Path, out: Path, *extra: str) -> dict:  # noqa: ANN001
    result = CliRunner().invoke(app, ["eval", "run", str(tasks), "--model", f"replay:{script}", "--out", str(out),
                                      "--sandbox", "subprocess", "--run-id", "r", *extra])
    assert result.exit_code == 0, result.output
    return json.loads((out / "summary.json").read_text())


def _verdicts(out: Path) -> dict[tuple[str, int], tuple]:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == len({(r["instance_id"], r["attempt"]) for r in rows})  # never a duplicate
    return {(r["instance_id"], r["attempt"]): (r["resolved"], r["patch_applied"], r["f2p"], r["p2p"], r["exit_reason"],
                                               r["infra_failure"]) for r in rows}


def _same_summary(a: dict, b: dict) -> None:
    for key in ("n_tasks", "n_attempts", "resolved", "solve_rate", "pass_at_k", "infra_failures", "by_repo"):
        assert a[key] == b[key], key


def test_names_resources_and_files_come_back(cluster, worker_tmp: Path, tmp_path: Path) -> None:
    executor = make_executor(RAY)
    raw = executor.call(Job(name="scratch", fn=task_facts, args=("hi",), outputs=tmp_path / "raw",
                            rebase=lambda v, old, new: v))["path"]
    assert worker_tmp in Path(raw).parents  # the job wrote under the workers' root, never the driver's folder
    job = Job(name="attempt toolz.second #1", fn=task_facts, args=("hi",), needs=Needs(cpus=1.0, memory_mb=64),
              outputs=tmp_path, rebase=lambda v, old, new: {**v, "path": str(new / Path(v["path"]).relative_to(old))})
    facts = executor.call(job)
    assert facts["name"] == "attempt toolz.second #1"  # what the dashboard's task list shows
    assert facts["resources"]["CPU"] == 1.0 and facts["resources"]["memory"] == 64 << 20
    assert Path(facts["path"]) == tmp_path / "notes" / "word.txt" and Path(facts["path"]).read_text() == "hi"
    with pytest.raises(ValueError, match="the job's own error"):  # the job's exception is its result, not retried
        executor.call(Job(name="fails", fn=fails, args=("the job's own error",)))
    assert executor.infra_retries == 0


def test_a_lost_pool_actor_starts_again_with_the_latest_broadcast(cluster) -> None:
    """An RL-style worker: its actor is SIGKILLed during a call; the call runs again on a new actor that
    first got the last broadcast (as a rollout actor gets the current weights and version)."""
    import os
    import signal
    import threading

    executor = make_executor(RAY)
    [worker] = executor.pool(Keeper, 1, "keeper", Needs(cpus=0.5))
    executor.broadcast([worker], "set", 5)
    pid, before = worker.call("pid"), executor.infra_retries
    killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
    killer.start()
    try:
        assert worker.call("slow_value", 2.0) == 5
    finally:
        killer.cancel()
    assert worker.call("pid") != pid and executor.infra_retries == before + 1
    executor.release([worker])


def test_eval_run_on_ray_gives_the_local_results(cluster, app, toolz_tasks, tmp_path: Path) -> None:  # noqa: F811
    tasks, _ = toolz_tasks
    script = _script(tmp_path / "fix.jsonl")
    local = _eval(app, tasks, script, tmp_path / "local", "--workers", "2", "--attempts", "2")
    remote = _eval(app, tasks, script, tmp_path / "ray", "--ray", "local", "--attempts", "2")
    assert _verdicts(tmp_path / "local") == _verdicts(tmp_path / "ray")
    _same_summary(local, remote)
    assert remote["executor"] == "ray" and remote["infra_retries"] == 0 and remote["resolved"] == 2  # second x2
    rows = [json.loads(line) for line in (tmp_path / "ray" / "results.jsonl").read_text().splitlines()]
    for row in rows:  # each trajectory came back into the driver's folder, under the same name
        assert Path(row["traj_path"]).parent == tmp_path / "ray" / "trajectories" and Path(row["traj_path"]).is_file()
    assert _patches(tmp_path / "local") == _patches(tmp_path / "ray")


def _patches(out: Path) -> dict[tuple[str, int], str]:
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 6
    return {(p["instance_id"], p["attempt"]): p["model_patch"] for p in preds}


def test_a_worker_killed_mid_attempt_is_retried_once(cluster, app, toolz_tasks, tmp_path: Path) -> None:  # noqa: F811
    """The first attempt's own Bash SIGKILLs its parent: the Ray worker process running the attempt."""
    tasks, _ = toolz_tasks
    counter = tmp_path / "count"
    crash = {"name": "Bash", "arguments": {"command": f"n=$(cat {counter} 2>/dev/null || echo 0); "
                                                      f"echo $((n+1)) > {counter}; [ $n = 0 ] && kill -9 $PPID; true"}}
    counter.write_text("1\n")  # the local reference run must not kill its parent: this test process
    plain = _eval(app, tasks, _script(tmp_path / "fix.jsonl", [{"content": "", "tool_calls": [crash]}]),
                  tmp_path / "local", "--attempts", "1", "--workers", "1")
    counter.unlink()
    killed = _eval(app, tasks, _script(tmp_path / "fix.jsonl", [{"content": "", "tool_calls": [crash]}]),
                   tmp_path / "ray", "--attempts", "1", "--ray", "local")
    assert counter.read_text().strip() == "4"  # three attempts, one of them run twice
    _same_summary(plain, killed)
    assert killed["infra_retries"] == 1 and killed["infra_failures"] == 0
    assert _verdicts(tmp_path / "local") == _verdicts(tmp_path / "ray")


def test_an_interrupted_driver_resumes_on_the_other_executor(cluster, toolz_tasks, tmp_path: Path) -> None:  # noqa: F811
    """The driver stops after its first result (Ctrl-C): in-flight Ray attempts are cancelled and write
    nothing; `resume` on the local executor runs only the rest, and the finished line is kept as it was."""
    from dataclasses import replace

    from leaf_cli.llm.replay import ReplayEngine
    from leaf_cli.tasks import EvalConfig, load_tasks, make_sandbox, run_eval

    path, _ = toolz_tasks
    task_file = load_tasks(path)
    script = _script(tmp_path / "fix.jsonl")
    config = EvalConfig(out=tmp_path / "run", sandbox=make_sandbox("subprocess"), model_name="replay",
                        base_dir=task_file.base_dir, attempts=1, run_id="r", executor=make_executor(RAY))

    def interrupt(_result) -> None:  # noqa: ANN001
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_eval(task_file.tasks, lambda: ReplayEngine.from_file(script), config, interrupt)
    first = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert len(first) == 1
    summary = run_eval(task_file.tasks, lambda: ReplayEngine.from_file(script), replace(config, resume=True, executor=None))
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert lines[0] == first[0] and len(_verdicts(tmp_path / "run")) == 3
    assert summary["n_attempts"] == 3 and summary["executor"] == "local" and summary["resolved"] == 1


def _validated(out: Path) -> list[tuple]:
    rows = [json.loads(line) for line in (out / "validated.jsonl").read_text().splitlines()]
    return sorted((r["candidate"], r["ok"], r["reason"], r["f2p"], r["p2p"], r["gold_resolved"]) for r in rows)


def _accepted(out: Path) -> list[tuple]:
    rows = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()] if (out / "tasks.jsonl").exists() else []
    return sorted((t["instance_id"], t["problem_statement"], t["FAIL_TO_PASS"], t["PASS_TO_PASS"]) for t in rows)


@pytest.mark.slow
def test_taskpilot_synth_on_ray_validates_the_same_tasks(cluster, tmp_path: Path) -> None:
    """Snapshot suite, validations and calibration rollouts (the SCRIPTED oracle, not a model) as Ray tasks."""
    from leaf_train.taskpilot import pipeline
    from leaf_train.taskpilot.config import SynthConfig
    from tests.training.taskpilot.taskpilot_mathx import make_package_repo

    repo = make_package_repo(tmp_path / "mathx")
    for name, executor in (("local", ExecutorConfig()), ("ray", RAY)):  # one cache: one snapshot, one venv
        pipeline.run(SynthConfig(sources=[str(repo)], target=1, rollouts=2, band=(0.0, 1.0), max_candidates=2,
                                 sandbox="subprocess", out=tmp_path / name, cache_dir=tmp_path / "cache",
                                 executor=executor))
    assert _validated(tmp_path / "local") == _validated(tmp_path / "ray")
    assert any(v[1] for v in _validated(tmp_path / "ray")) and _accepted(tmp_path / "ray")
    assert _accepted(tmp_path / "local") == _accepted(tmp_path / "ray")
    rollouts = sorted((tmp_path / "ray" / "rollouts").glob("*/results.jsonl"))
    assert rollouts and all(json.loads(line)["infra_retries"] == 0 for p in rollouts for line in p.read_text().splitlines())


@pytest.mark.slow
def test_taskpilot_work_ships_its_files_to_the_driver(cluster, tmp_path: Path) -> None:
    """A fresh cache: the snapshot repository is made by a Ray job under the workers' scratch root and lands
    in the driver's cache; each validation's start-state commit comes back as git objects plus its ref. The
    driver's run folder and repository then hold every record the local run's do."""
    import subprocess

    from leaf_train.taskpilot import pipeline
    from leaf_train.taskpilot.config import SynthConfig
    from tests.training.taskpilot.taskpilot_mathx import make_package_repo

    repo = make_package_repo(tmp_path / "mathx")
    for name, executor in (("local", ExecutorConfig()), ("ray", RAY)):
        pipeline.run(SynthConfig(sources=[str(repo)], target=1, rollouts=2, band=(0.0, 1.0), max_candidates=2,
                                 sandbox="subprocess", out=tmp_path / name, cache_dir=tmp_path / f"cache-{name}",
                                 executor=executor))
    assert _validated(tmp_path / "local") == _validated(tmp_path / "ray")
    assert _accepted(tmp_path / "local") == _accepted(tmp_path / "ray") and _accepted(tmp_path / "ray")
    snaps = [json.loads(line) for line in (tmp_path / "ray" / "snapshots.jsonl").read_text().splitlines()]
    assert [s["status"] for s in snaps] == ["ok"]
    driver_repo = Path(snaps[0]["repo"])
    assert (tmp_path / "cache-ray") in driver_repo.parents and (driver_repo / ".git").is_dir()
    starts = [json.loads(line) for line in (tmp_path / "ray" / "validated.jsonl").read_text().splitlines()]
    bases = {v["base_commit"] for v in starts if v["ok"]}
    assert bases and bases != {snaps[0]["commit"]}
    for commit in bases:  # present in the driver's repository and kept by a ref
        git = ["git", "-C", str(driver_repo), "cat-file", "-e", f"{commit}^{{commit}}"]
        assert subprocess.run(git, capture_output=True, timeout=30).returncode == 0, commit
        assert (driver_repo / ".git" / "refs" / "taskpilot" / commit).read_text().strip() == commit
    tasks = [json.loads(line) for line in (tmp_path / "ray" / "tasks.jsonl").read_text().splitlines()]
    assert all(Path(t["repo"]).resolve() == driver_repo.resolve() for t in tasks)


@pytest.mark.slow
def test_rl_run_with_ray_rollout_actors(cluster, tiny_model_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    """A tiny random Llama (built here, no download) trains 3 steps with one Ray rollout actor; the actor's
    tokens carry the versions the driver broadcast, so staleness stays within the bound."""
    pytest.importorskip("transformers")
    from leaf_train.rl.config import RLConfig
    from leaf_train.rl.run import make_environment, train
    cfg = RLConfig.model_validate({
        "steps": 3, "out_dir": str(tmp_path / "run"), "checkpoint_every": 0, "torch_threads": 1,
        "model": {"path": str(tiny_model_dir)}, "optim": {"lr": 1e-3, "micro_batch_size": 2},
        "rollout": {"group_size": 2, "groups_per_step": 1, "workers": 1, "max_tokens": 8, "max_turns": 1,
                    "max_context": 1024, "template": "tokenizer", "max_staleness": 1, "temperature": 1.0},
        "env": {"num_tasks": 2, "sandbox": "subprocess"}, "logging": {"tensorboard": False, "plot": False},
        "executor": {"kind": "ray", "address": "local"}})
    out = Path(cfg.out_dir)
    train(cfg, make_environment(cfg, out), out)
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [0, 1, 2]
    assert all(0 <= s["staleness_max"] <= 1 for s in steps)
    assert (out / "checkpoints").is_dir() and list((out / "trajectories").glob("g*.jsonl"))
