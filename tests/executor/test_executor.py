"""The executor seam without Ray: configuration, placement from tasks, artifact landing, the local
executor's behaviour, and that nothing imports Ray unless asked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.executor import ExecutorConfig, Job, LocalExecutor, Needs, make_executor, parse_ray_address
from leaf_cli.executor.artifacts import pack, rebased, unpack
from leaf_cli.executor.config import from_flag
from leaf_cli.tasks.runner.placement import needs_of
from leaf_cli.tasks import Task


def _task(**extra) -> Task:
    return Task.model_validate({"instance_id": "t", "repo": "r", "base_commit": "c", "problem_statement": "p",
                                "patch": "", "FAIL_TO_PASS": [], **extra})


@pytest.mark.parametrize("address,expected", [("local", None), ("auto", "auto"), ("ray://head:10001", "ray://head:10001"),
                                              ("10.0.0.1:6379", "10.0.0.1:6379")])
def test_ray_addresses(address: str, expected: str | None) -> None:
    assert parse_ray_address(address) == expected


def test_bad_address_is_one_clear_error() -> None:
    with pytest.raises(LeafError, match="local, auto, ray://"):
        parse_ray_address("somewhere")
    with pytest.raises(ValueError):
        ExecutorConfig(kind="ray", address="nowhere")


def test_flag_wins_over_the_config_section() -> None:
    section = ExecutorConfig(kind="ray", address="auto", max_infra_retries=5)
    assert from_flag(None, section) is section
    chosen = from_flag("local", section)
    assert (chosen.kind, chosen.address, chosen.max_infra_retries) == ("ray", "local", 5)
    assert from_flag(None).kind == "local" and isinstance(make_executor(None), LocalExecutor)


def test_placement_reads_the_task() -> None:
    harbor = _task(harbor={"cpus": 2, "memory_mb": 8192}, eval_type="reward", source={"kind": "harbor"},
                   image_name="img")
    assert needs_of(harbor, "docker") == Needs(cpus=2.0, memory_mb=8192, sandbox="docker")
    swebench = _task(image_name="swebench/sweb.eval.x86_64.astropy", eval_type="swebench")
    assert needs_of(swebench, "docker", ExecutorConfig(image_memory_mb=2048)).memory_mb == 2048
    assert needs_of(_task(), "bwrap") == Needs(cpus=1.0, memory_mb=None, sandbox="bwrap")


def test_artifacts_land_atomically_and_stay_inside(tmp_path: Path) -> None:
    src = tmp_path / "scratch"
    (src / "trajectories").mkdir(parents=True)
    (src / "trajectories" / "a__0.jsonl").write_text("{}\n")
    files = pack(src)
    unpack(files, tmp_path / "out")
    assert (tmp_path / "out" / "trajectories" / "a__0.jsonl").read_text() == "{}\n"
    assert not list((tmp_path / "out").rglob(".*.partial"))
    with pytest.raises(ValueError, match="outside"):
        unpack({"../evil": b"x"}, tmp_path / "out")
    assert rebased(str(src / "trajectories" / "a__0.jsonl"), src, tmp_path / "out") == str(
        tmp_path / "out" / "trajectories" / "a__0.jsonl")
    assert rebased("/elsewhere/x", src, tmp_path / "out") == "/elsewhere/x"


def test_local_executor_runs_jobs_in_threads_and_propagates_errors(tmp_path: Path) -> None:
    executor = LocalExecutor()
    jobs = [Job(name=f"job {i}", fn=lambda i, out: (out / f"{i}.txt").write_text(str(i)) and i, args=(i,),
                outputs=tmp_path) for i in range(4)]
    done = list(executor.run(jobs, workers=2))
    assert sorted(d.value for d in done if d.value) == [1, 2, 3] and all(d.lost is None for d in done)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.txt", "1.txt", "2.txt", "3.txt"]
    with pytest.raises(ZeroDivisionError):
        executor.call(Job(name="bad", fn=lambda: 1 / 0))
    shared = executor.pool(lambda: {"n": 0}, 3, "w", Needs())
    assert len(shared) == 3 and len({id(w.target) for w in shared}) == 1  # one engine, many threads


def test_leaf_help_and_local_runs_never_import_ray() -> None:
    code = ("import sys\nfrom leaf_cli.cli.main import app\nfrom typer.testing import CliRunner\n"
            "CliRunner().invoke(app, ['--help'])\nimport leaf_cli.executor, leaf_cli.tasks.runner.eval\n"
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_a_bad_ray_address_stops_eval_with_one_line(tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from leaf_cli.cli import eval as eval_cli

    app = typer.Typer()
    eval_cli.register(app)
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(_task().to_json() + "\n")
    (tmp_path / "r.jsonl").write_text('{"content": "x"}\n')
    result = CliRunner().invoke(app, ["eval", "run", str(tasks), "-m", f"replay:{tmp_path / 'r.jsonl'}", "-o",
                                      str(tmp_path / "out"), "--ray", "bogus"])
    assert result.exit_code == 2 and "--ray 'bogus'" in result.output and not (tmp_path / "out").exists()


def test_rl_and_synth_take_ray_from_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from leaf_train.rl.cli import main as rl_main
    from leaf_train.taskpilot.cli import synth_command

    config = tmp_path / "rl.yaml"
    config.write_text("steps: 1\nexecutor: {kind: local}\n")
    assert rl_main(["--config", str(config), "--ray", "bogus"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == ["leaf: error: --ray 'bogus': give local, auto, ray://HOST:PORT or HOST:PORT"]
    with pytest.raises(LeafError, match="--ray 'nowhere'"):
        synth_command(source=[str(tmp_path)], out=tmp_path / "tp", ray="nowhere", progress=False)
