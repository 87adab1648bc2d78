"""Harbor / Terminal-Bench 2.0 task folders and PatchEval records -> reward-graded tasks; the Harbor
verifier run for real on the subprocess sandbox (Dockerfile ignored, container paths rewritten)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.tasks.importers import import_harbor, import_patcheval_rows, read_rows
from leaf_cli.tasks.envs.path_rewrite import rewrite
from leaf_cli.tasks.format.reward_spec import reward_spec
from leaf_cli.tasks.grading.harbor import read_reward
from leaf_cli.tasks.grading.reward import grade_reward
from leaf_cli.tasks.envs.sandbox import SubprocessSandbox

TEST_SH = """#!/bin/bash
# Terminal-Bench style verifier: check the agent's output in /app, write the reward under /logs/verifier.
mkdir -p /logs/verifier
if [ "$(cat /app/answer.txt 2>/dev/null)" = "42" ] && python3 /tests/check.py /app/answer.txt; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def harbor_task_dir(root: Path, name: str = "answer-question", *, reward_json: bool = False) -> Path:
    folder = root / name
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "solution").mkdir()
    (folder / "instruction.md").write_text("Write the answer, 42, to /app/answer.txt.\n")
    (folder / "task.toml").write_text(
        'version = "1.0"\n\n[metadata]\ndifficulty = "easy"\n\n[verifier]\ntimeout_sec = 60.0\n\n'
        '[agent]\ntimeout_sec = 900.0\n\n[environment]\nbuild_timeout_sec = 300.0\ncpus = 1\nmemory_mb = 2048\n')
    (folder / "environment" / "Dockerfile").write_text("FROM python:3.11-slim\nWORKDIR /app\nCOPY . /app\n")
    script = TEST_SH.replace("echo 1 > /logs/verifier/reward.txt", "echo '{\"reward\": 1.0}' > /logs/verifier/reward.json") \
        if reward_json else TEST_SH
    (folder / "tests" / "test.sh").write_text(script)
    (folder / "tests" / "check.py").write_text("import sys\nprint(open(sys.argv[1]).read().strip() == '42')\n")
    (folder / "solution" / "solve.sh").write_text("echo 42 > /app/answer.txt\n")
    return folder


def test_harbor_folder_becomes_a_reward_graded_task(tmp_path: Path) -> None:
    harbor_task_dir(tmp_path / "tb2")
    [task] = import_harbor(tmp_path / "tb2")
    extra = task.model_extra
    spec = reward_spec(task)
    assert task.instance_id == "answer-question" and task.FAIL_TO_PASS == [] and task.problem_statement.startswith("Write")
    assert spec.kind == "harbor" and spec.command == "bash /tests/test.sh" and spec.workdir == "/app"
    assert spec.timeout_s == 60.0 and task.timeouts.agent_s == 900.0 and task.timeouts.build_s == 300.0
    assert extra["image_name"].startswith("leaf-harbor/answer-question:")
    assert extra["harbor"]["solution"].endswith("solution/solve.sh") and task.source["metadata"] == {"difficulty": "easy"}


def test_harbor_prebuilt_image_and_missing_files(tmp_path: Path) -> None:
    folder = harbor_task_dir(tmp_path)
    (folder / "task.toml").write_text('[environment]\ndocker_image = "ghcr.io/x/task:1"\n')
    assert import_harbor(folder)[0].model_extra["image_name"] == "ghcr.io/x/task:1"
    (folder / "tests" / "test.sh").unlink()
    with pytest.raises(LeafError, match="missing tests/test.sh"):
        import_harbor(folder)
    with pytest.raises(LeafError, match="no task.toml under"):
        import_harbor(tmp_path / "answer-question" / "environment")


@pytest.mark.parametrize("reward_json", [False, True])
def test_harbor_reward_on_the_subprocess_sandbox(tmp_path: Path, reward_json: bool) -> None:
    folder = harbor_task_dir(tmp_path / "tasks", reward_json=reward_json)
    [task] = import_harbor(folder)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    failed = grade_reward(task, SubprocessSandbox(), workspace=workspace)
    assert failed.resolved is False and failed.reward == 0.0 and failed.infra_failure is None
    (workspace / "answer.txt").write_text("42\n")
    passed = grade_reward(task, SubprocessSandbox(), workspace=workspace)
    assert passed.resolved is True and passed.reward == 1.0 and passed.exit_code == 0
    assert (folder / "tests" / "test.sh").read_text().count("/logs/verifier") >= 2  # the task folder is untouched
    assert not Path("/logs/verifier").exists() or not (Path("/logs/verifier") / "reward.txt").exists()


def test_verifier_that_writes_no_reward_is_an_infra_failure(tmp_path: Path) -> None:
    folder = harbor_task_dir(tmp_path)
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho forgot the reward\n")
    [task] = import_harbor(folder)
    (tmp_path / "ws").mkdir()
    result = grade_reward(task, SubprocessSandbox(), workspace=tmp_path / "ws")
    assert result.resolved is False and result.infra_failure == "no_reward" and "forgot the reward" in result.output_tail


def test_reward_files_and_path_rewriting(tmp_path: Path) -> None:
    (tmp_path / "reward.json").write_text('{"accuracy": 0.5}')
    assert read_reward(tmp_path) == {"accuracy": 0.5}
    (tmp_path / "reward.json").write_text('{"a": 1, "b": false}')  # every key kept, booleans as 0/1 (Harbor)
    assert read_reward(tmp_path) == {"a": 1.0, "b": 0.0}
    (tmp_path / "reward.json").write_text('{"a": "high"}')
    with pytest.raises(ValueError, match="not a finite number"):
        read_reward(tmp_path)
    (tmp_path / "reward.json").unlink()
    assert read_reward(tmp_path) is None
    mapping = {"/tests": "/s/tests", "/logs/verifier": "/s/logs/verifier", "/logs": "/s/logs", "/app": "/w"}
    assert rewrite("cat /app/x > /logs/verifier/reward.txt; ls /logs/agent /tests/ /apple /my/app", mapping) == \
        "cat /w/x > /s/logs/verifier/reward.txt; ls /s/logs/agent /s/tests/ /apple /my/app"


def patcheval_record() -> dict:
    """A record as bytedance/PatchEval's patcheval_verified.json ships it (one JSON list)."""
    return {
        "cve_id": "CVE-2021-23376", "cve_description": "Command injection in trimvideo.",
        "cwe_info": {"CWE-78": {"name": "OS Command Injection", "description": "..."}},
        "repo": "https://github.com/TRomesh/ffmpegdotjs",
        "patch_url": ["https://github.com/TRomesh/ffmpegdotjs/commit/dae8687"], "programing_language": "JavaScript",
        "vul_func": [{"id": "vul_js_21_1", "commit": "b7395da", "file_path": "index.js", "snippet": "exec(...)"}],
        "fix_func": [{"id": "fix_js_21_1", "commit": "dae8687", "file_path": "index.js", "snippet": "execFile(...)"}],
        "image_url": "ghcr.io/patcheval-cve/patcheval-cve:cve-2021-23376",
    }


def test_patcheval_records_become_script_graded_tasks(tmp_path: Path) -> None:
    (tmp_path / "patcheval_verified.json").write_text(json.dumps([patcheval_record()], indent=4))
    [task] = import_patcheval_rows(read_rows(tmp_path / "patcheval_verified.json"))
    spec = reward_spec(task)
    assert task.instance_id == "CVE-2021-23376" and task.base_commit == "b7395da"
    assert task.model_extra["image_name"] == "ghcr.io/patcheval-cve/patcheval-cve:cve-2021-23376"
    assert spec.kind == "patcheval" and spec.success == "patcheval" and spec.patch_path == "/workspace/fix.patch"
    assert "bash fix-run.sh" in spec.command and "bash unit_test.sh" in spec.command
    assert spec.workdir == "/workspace/ffmpegdotjs"  # the repository's folder under /workspace
    assert "Command injection in trimvideo." in task.problem_statement and "CWE-78: OS Command Injection" in task.problem_statement
    assert "execFile" not in task.problem_statement and "dae8687" not in task.problem_statement
    derived = import_patcheval_rows([{**patcheval_record(), "image_url": None}])[0]  # as PatchEval's evaluator names it
    assert derived.model_extra["image_name"] == "ghcr.io/anonymous2578-data/cve-2021-23376:latest"


def test_patcheval_on_a_host_sandbox_says_it_needs_docker(tmp_path: Path) -> None:
    [task] = import_patcheval_rows([patcheval_record()])
    with pytest.raises(LeafError, match="grade it with --sandbox docker"):
        grade_reward(task, SubprocessSandbox(), patch="diff --git a/x b/x\n")


def test_docker_path_stops_at_once_without_a_daemon(tmp_path: Path) -> None:
    from leaf_cli.tasks.envs.docker import DockerSandbox

    sandbox = DockerSandbox()
    try:
        sandbox.prepare()
    except LeafError as exc:
        [task] = import_patcheval_rows([patcheval_record()])
        with pytest.raises(LeafError, match="Docker") as raised:
            grade_reward(task, sandbox, patch="")
        assert str(raised.value) == str(exc)
        pytest.skip(f"[no-docker] no Docker daemon here, so the image run itself cannot be tested: {exc}")
    if shutil.which("docker") is None:  # pragma: no cover - prepare() already failed above
        pytest.skip("[no-docker] docker CLI missing")
    folder = harbor_task_dir(tmp_path / "tasks")
    (folder / "task.toml").write_text('[environment]\ndocker_image = "python:3.11-slim"\n')
    [task] = import_harbor(folder)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "answer.txt").write_text("42\n")
    result = grade_reward(task, sandbox, workspace=tmp_path / "ws")
    assert result.resolved and result.reward == 1.0
