"""Terminal-Bench 2.0 / Harbor tasks against Harbor 0.25.0: task.toml read by leaf and by Harbor's own
`TaskConfig` (and its verifier-mode resolution) on task folders in Harbor's layout, field by field; then
the container command lines leaf builds from them (Docker itself is not here: the argv is the contract),
stale rewards, Harbor's reward files and the attempt's time limit."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from leaf_cli.agent import Limits
from leaf_cli.errors import LeafError
from leaf_cli.tasks.envs import image as image_module
from leaf_cli.tasks.envs import verifier_runs as verifier_runs_module
from leaf_cli.tasks.grading import reward as reward_module
from leaf_cli.tasks.runner.attempt import attempt_limits
from leaf_cli.tasks.envs.container_args import run_args
from leaf_cli.tasks.envs.image import ImageSession
from leaf_cli.tasks.importers import harbor_import
from leaf_cli.tasks.envs.proc import RunResult
from leaf_cli.tasks.envs.verifier_runs import separate_verifier_argv
from leaf_cli.tasks.format.reward_spec import reward_spec
from leaf_cli.tasks.grading.harbor import read_reward

from .official import load

TOMLS = {
    "defaults": 'version = "1.0"\n[agent]\ntimeout_sec = 900.0\n[verifier]\ntimeout_sec = 120.0\n'
                '[environment]\nmemory = "4G"\ncpus = 2\n',
    "legacy-offline": 'version = "1.0"\n[environment]\nallow_internet = false\nmemory_mb = 2048\n',
    "phase-override": 'version = "1.0"\n[environment]\nnetwork_mode = "no-network"\nmemory = "512M"\n'
                      '[verifier]\nnetwork_mode = "public"\n',
    "workdir": 'version = "1.0"\n[environment]\nworkdir = "/srv/work"\ncpus = 0.5\n',
    "separate": 'version = "1.0"\n[verifier]\nenvironment_mode = "separate"\ntimeout_sec = 300\n'
                '[agent]\ntimeout_sec = 60\n',
    "verifier-env": 'version = "1.0"\n[verifier.environment]\ndocker_image = "ghcr.io/x/grader:1"\n',
    "shared": 'version = "1.0"\n[verifier]\nenvironment_mode = "shared"\n[environment]\nmemory = "1.5G"\n',
}


def task_folder(root: Path, name: str, toml: str, *, compose: bool = False) -> Path:
    """A task in Harbor's layout: instruction.md, task.toml, environment/, tests/test.sh, solution/solve.sh."""
    folder = root / name
    for sub in ("environment", "tests", "solution"):
        (folder / sub).mkdir(parents=True)
    (folder / "instruction.md").write_text(f"Task {name}: write 42 to answer.txt.\n")
    (folder / "task.toml").write_text(toml)
    (folder / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    if compose:
        (folder / "environment" / "docker-compose.yaml").write_text("services:\n  main:\n    build: .\n  db:\n    image: postgres:16\n")
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\ncurl -LsSf https://astral.sh/uv/install.sh | sh\n"
                                              "echo 1 > /logs/verifier/reward.txt\n")
    (folder / "solution" / "solve.sh").write_text("echo 42 > answer.txt\n")
    return folder


@pytest.fixture(scope="module")
def harbor():
    return load("harbor-0.25.0", ("harbor", "harbor.models", "harbor.models.task"), "harbor.models.task.config",
                "harbor.models.task.verifier_mode")


def test_task_toml_read_as_harbor_reads_it(harbor, tmp_path: Path) -> None:
    config_module, modes = harbor
    for name, toml in TOMLS.items():
        task_folder(tmp_path, name, toml)
    imported = harbor_import(tmp_path)
    assert not imported.refused and len(imported.tasks) == len(TOMLS)
    compared = 0
    for task in imported.tasks:
        official = config_module.TaskConfig.model_validate(tomllib.loads(TOMLS[task.instance_id]))
        ours = task.model_extra["harbor"]
        baseline = official.environment.network_mode.value
        phase = {p: (getattr(official, p).network_mode.value if getattr(official, p).network_mode else baseline)
                 for p in ("agent", "verifier")}
        assert ours["network"] == phase
        assert ours["memory_mb"] == official.environment.memory_mb and ours["cpus"] == official.environment.cpus
        assert ours["verifier_mode"] == modes.resolve_task_verifier_mode(official).value
        assert reward_spec(task).timeout_s == official.verifier.timeout_sec
        assert task.timeouts.agent_s == (official.agent.timeout_sec or 1800.0)
        assert task.timeouts.build_s == official.environment.build_timeout_sec
        assert task.model_extra["workdir"] == (official.environment.workdir or "/app")
        compared += 1
    assert compared == 7
    by_name = {t.instance_id: t.model_extra["harbor"] for t in imported.tasks}
    assert by_name["defaults"]["network"] == {"agent": "public", "verifier": "public"}  # no field: the network is on
    assert by_name["defaults"]["memory_mb"] == 4096 and by_name["shared"]["memory_mb"] == 1536


def test_compose_allowlist_and_broken_tasks_are_refused_alone(tmp_path: Path) -> None:
    task_folder(tmp_path, "plain", TOMLS["defaults"])
    task_folder(tmp_path, "with-db", TOMLS["defaults"], compose=True)
    task_folder(tmp_path, "allowlist", 'version = "1.0"\n[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n')
    task_folder(tmp_path, "conflict", 'version = "1.0"\n[environment]\nmemory = "4G"\nmemory_mb = 1024\n')
    imported = harbor_import(tmp_path)
    assert [t.instance_id for t in imported.tasks] == ["plain"]
    reasons = {Path(k).name: v for k, v in imported.refused.items()}
    assert "docker-compose" in reasons["with-db"] and "allowlist" in reasons["allowlist"]
    assert "disagree" in reasons["conflict"]


def test_container_command_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `docker run` gets: network per phase, cpu and memory limits, the workdir; separate verifiers get
    a fresh container of their image without the agent's workspace."""
    for name in ("defaults", "legacy-offline", "phase-override", "separate", "verifier-env"):
        task_folder(tmp_path, name, TOMLS[name])
    tasks = {t.instance_id: t for t in harbor_import(tmp_path).tasks}
    assert run_args(tasks["defaults"], "agent") == ["--cpus", "2", "--memory", "4096m"]
    assert run_args(tasks["legacy-offline"], "agent") == ["--network", "none", "--memory", "2048m"]
    assert run_args(tasks["phase-override"], "agent")[:2] == ["--network", "none"]
    assert "--network" not in run_args(tasks["phase-override"], "verifier")
    seen: list[list[str]] = []
    monkeypatch.setattr(image_module, "docker", lambda args, **kw: seen.append(args) or "")
    ImageSession(tasks["defaults"], tmp_path / "ws").start()
    argv = seen[-1]
    assert argv[argv.index("--cpus") + 1] == "2" and argv[argv.index("--memory") + 1] == "4096m"
    assert "none" not in argv and argv[argv.index("-w") + 1] == "/app"
    scratch = tmp_path / "scratch"
    separate = separate_verifier_argv(tasks["verifier-env"], reward_spec(tasks["verifier-env"]), scratch)
    assert "ghcr.io/x/grader:1" in separate and not any(str(tmp_path / "ws") in a for a in separate)
    assert f"{scratch / 'artifacts'}:/logs/artifacts" in separate


def test_stale_rewards_are_deleted_before_the_verifier(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent can write /logs/verifier/reward.txt itself; Harbor removes both reward files first."""
    task_folder(tmp_path, "t", TOMLS["defaults"])
    [task] = harbor_import(tmp_path).tasks
    calls: list[list[str]] = []

    def fake_run(argv, **kw):  # noqa: ANN001, ANN003 - stands in for docker, which this machine lacks
        calls.append(list(argv))
        if argv[:2] == ["docker", "cp"] and argv[2].endswith("/logs/verifier/."):
            (Path(argv[3]) / "reward.txt").write_text("0\n")
        return RunResult(argv=list(argv), returncode=0, stdout="", stderr="", seconds=0.1)

    monkeypatch.setattr(verifier_runs_module, "run_process", fake_run)
    result = reward_module.grade_reward(task, _NoSandbox(), workspace=tmp_path, container="agent-1")
    removes = [i for i, c in enumerate(calls) if c[:4] == ["docker", "exec", "agent-1", "rm"]]
    verify = [i for i, c in enumerate(calls) if "bash /tests/test.sh" in c]
    assert removes and verify and removes[0] < verify[0]
    assert calls[removes[0]][-2:] == ["/logs/verifier/reward.txt", "/logs/verifier/reward.json"]
    assert result.reward == 0.0 and not result.resolved
    assert not any(c[:3] == ["docker", "network", "disconnect"] for c in calls)  # both phases public: no switch


def test_the_verifier_phase_gets_its_own_network(tmp_path: Path) -> None:
    task_folder(tmp_path, "phase-override", TOMLS["phase-override"])
    task_folder(tmp_path, "defaults", TOMLS["defaults"])
    tasks = {t.instance_id: t for t in harbor_import(tmp_path).tasks}
    assert verifier_runs_module.network_switch(tasks["phase-override"], "c1") == [
        ["docker", "network", "disconnect", "none", "c1"], ["docker", "network", "connect", "bridge", "c1"]]
    assert verifier_runs_module.network_switch(tasks["defaults"], "c1") == []


class _NoSandbox:
    """The docker backend's name only: every docker command above is answered by `fake_run`."""

    name = "docker"


def test_reward_files_as_harbor_reads_them(tmp_path: Path) -> None:
    cases = {'{"reward": 1}': {"reward": 1.0}, '{"passed": true, "score": 0.25}': {"passed": 1.0, "score": 0.25},
             "0.5": {"reward": 0.5}, "false": {"reward": 0.0}}
    for text, expected in cases.items():
        (tmp_path / "reward.json").write_text(text)
        assert read_reward(tmp_path) == expected
    for bad in ("", '{"reward": "1"}', '{"reward": NaN}', "[1]"):
        (tmp_path / "reward.json").write_text(bad)
        with pytest.raises(ValueError):
            read_reward(tmp_path)
    (tmp_path / "reward.json").unlink()
    (tmp_path / "reward.txt").write_text(" 1.0\n")
    assert read_reward(tmp_path) == {"reward": 1.0}
    (tmp_path / "reward.txt").write_text("inf")
    with pytest.raises(ValueError):
        read_reward(tmp_path)
    assert reward_module.primary_reward({"passed": 1.0, "score": 0.25}) == 0.25  # no `reward` key: every one must pass


def test_agent_timeout_is_the_attempt_limit(tmp_path: Path) -> None:
    task_folder(tmp_path, "separate", TOMLS["separate"])
    [task] = harbor_import(tmp_path).tasks
    assert attempt_limits(task, None).max_seconds == 60.0
    assert attempt_limits(task, Limits(max_seconds=3000)).max_seconds == 60.0  # the run's longer limit is capped
    with pytest.raises(LeafError, match="separate container"):
        from leaf_cli.tasks.envs.sandbox import SubprocessSandbox

        reward_module.grade_reward(task, SubprocessSandbox(), workspace=tmp_path)
