"""Image tasks (SWE-bench / Pro / Harbor / PatchEval imports): the run stops at once without Docker, the
workspace made from an image's tree, the tools' container paths, the apply ladder and the verdicts from
grading logs, and the grading switch. The container runs themselves need a Docker daemon and skip without one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.tasks.runner.attempt import AttemptWorkspace, workspace_diff
from leaf_cli.tasks.envs.docker import DockerSandbox
from leaf_cli.tasks.grading.choose import grade, grader_of
from leaf_cli.tasks.grading.verdict import GradeResult
from leaf_cli.tasks.envs.image import (ContainerWorkspace, check_image_tasks, docker_problem, is_image_task,
                                  workspace_from_tree)
from leaf_cli.tasks.grading.swebench import apply_script, grade_in_image, pro_verdict, swebench_verdict
from leaf_cli.tasks.importers import import_harbor, import_swebench_rows
from leaf_cli.tasks.grading.log_parsers import END_MARKER, START_MARKER
from leaf_cli.tasks.runner.eval import EvalConfig, run_eval
from leaf_cli.tasks.envs.sandbox import SubprocessSandbox

from .importers.test_harbor_patcheval import harbor_task_dir
from .importers.test_swebench import verified_row
from .test_log_parsers import PRO_PARSER

F2P = "tests/test_core.py::test_fix"
P2P = ["tests/test_core.py::test_old", "tests/test_core.py::test_slow"]


def swebench_task(**over: object):
    row = verified_row(repo="pytest-dev/pytest", instance_id="pytest-dev__pytest-5103", version="5.4",
                       FAIL_TO_PASS=json.dumps([F2P]), PASS_TO_PASS=json.dumps(P2P),
                       test_patch="diff --git a/tests/test_core.py b/tests/test_core.py\n", **over)
    [task] = import_swebench_rows([row])
    return task


def log(*results: str, code: int = 1, applied: str = "git_apply") -> str:
    """A grading log as the container writes it (set -x trace, markers, echoed exit code)."""
    body = "\n".join(results)
    return (f">>>>> Applied Patch ({applied})\n+ : '{START_MARKER}'\n+ pytest -rA tests/test_core.py\n"
            f"==== short test summary info ====\n{body}\n+ leaf_status={code}\n+ : '{END_MARKER}'\n"
            f">>>>> Test Exit Code: {code}\n")


def verdict(task, text: str, **kw) -> GradeResult:  # noqa: ANN001
    return swebench_verdict(task, GradeResult(instance_id=task.instance_id, resolved=False, patch_applied="empty",
                                              grader="swebench"), text, **kw)


def test_swebench_log_verdicts() -> None:
    task = swebench_task()
    good = verdict(task, log(f"PASSED {F2P}", *[f"PASSED {t}" for t in P2P], "FAILED tests/test_core.py::test_other - x"))
    assert good.resolved and good.patch_applied == "git_apply" and good.exit_code == 1
    assert good.f2p == {F2P: "passed"} and set(good.p2p.values()) == {"passed"}
    broken = verdict(task, log(f"FAILED {F2P} - assert 1 == 2", *[f"PASSED {t}" for t in P2P]))
    assert not broken.resolved and broken.f2p == {F2P: "failed"} and broken.infra_failure is None
    missing = verdict(task, log(f"PASSED {F2P}", f"PASSED {P2P[0]}", code=0))
    assert not missing.resolved and missing.p2p[P2P[1]] == "missing"


def test_skipped_p2p_is_maintained_as_swebench_5_rules() -> None:
    task = swebench_task()
    text = log(f"PASSED {F2P}", f"PASSED {P2P[0]}", f"SKIPPED {P2P[1]}", code=0)
    official = verdict(task, text)
    assert official.resolved and official.p2p[P2P[1]] == "skipped"  # SWE-bench 5: a skipped P2P is maintained
    assert not verdict(task, text, p2p_skip_ok=False).resolved  # the strict reading, on request
    skipped_f2p = log(f"SKIPPED {F2P}", *[f"PASSED {t}" for t in P2P], code=0)
    assert not verdict(task, skipped_f2p).resolved  # a skipped F2P always fails


def test_swebench_log_hardening() -> None:
    task = swebench_task()
    fake = verdict(task, log(f"PASSED {F2P}", *[f"PASSED {t}" for t in P2P], code=2))
    assert not fake.resolved and "exited 2" in fake.error  # PASSED lines printed, yet the command failed
    no_markers = verdict(task, f">>>>> Applied Patch (git_apply)\nPASSED {F2P}\n")
    assert no_markers.infra_failure == "no_report" and not no_markers.resolved
    empty = verdict(task, log("collected 0 items", code=4))
    assert empty.infra_failure == "no_report"
    refused = verdict(task, ">>>>> Patch Apply Failed\nerror: patch failed: x.py:3\n")
    assert refused.patch_applied == "failed" and refused.error == "the patch does not apply"


def test_pro_verdict_from_output_json_or_its_parser(tmp_path: Path) -> None:
    [task] = import_swebench_rows([{
        "repo": "a/b", "instance_id": "instance_a__b-1", "base_commit": "f" * 40, "problem_statement": "x",
        "fail_to_pass": "['t.py::test_new']", "pass_to_pass": "['t.py::test_old']", "dockerhub_tag": "a.b-1",
        "selected_test_files_to_run": "['t.py']"}])
    task = task.model_copy(update={"parser_script": PRO_PARSER})
    base = lambda: GradeResult(instance_id=task.instance_id, resolved=False, patch_applied="empty")  # noqa: E731
    (tmp_path / "output.json").write_text(json.dumps({"tests": [{"name": "t.py::test_new", "status": "PASSED"},
                                                                {"name": "t.py::test_old", "status": "PASSED"}]}))
    assert pro_verdict(task, base(), ">>>>> Applied Patch (git_apply)\n", tmp_path).resolved
    (tmp_path / "output.json").unlink()  # the image could not run parser.py: leaf runs it on the logs
    (tmp_path / "stdout.log").write_text("t.py::test_new PASSED\nt.py::test_old FAILED\n")
    (tmp_path / "stderr.log").write_text("")
    result = pro_verdict(task, base(), "", tmp_path)
    assert not result.resolved and result.p2p == {"t.py::test_old": "failed"} and result.f2p == {"t.py::test_new": "passed"}


def _repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=path, check=True, env=env, capture_output=True)
    return path


def test_apply_ladder_runs_for_real(tmp_path: Path) -> None:
    """The ladder the grading container runs, run here with bash on a real repository."""
    lines = "".join(f"line {i}\n" for i in range(1, 40))
    repo = _repo(tmp_path / "testbed", {"src/a.py": lines})
    patch = ("diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -20,3 +20,3 @@\n"
             " line 20\n-line 21\n+line twenty-one\n line 22\n")
    (tmp_path / "patch.diff").write_text(patch)
    run = subprocess.run(["bash", "-c", apply_script(str(repo), str(tmp_path / "patch.diff"))],
                         capture_output=True, text=True)
    assert run.returncode == 0 and ">>>>> Applied Patch (git_apply)" in run.stdout
    assert "line twenty-one" in (repo / "src/a.py").read_text()
    fresh = _repo(tmp_path / "fresh", {"src/a.py": lines})
    (tmp_path / "bad.diff").write_text(patch.replace("-line 21", "-line 99"))
    bad = subprocess.run(["bash", "-c", apply_script(str(fresh), str(tmp_path / "bad.diff"))],
                         capture_output=True, text=True)
    assert bad.returncode == 97 and ">>>>> Patch Apply Failed" in bad.stdout


def test_workspace_from_an_image_tree_has_no_history(tmp_path: Path) -> None:
    tree = _repo(tmp_path / "tree", {"pkg/mod.py": "x = 1\n", ".gitignore": "build/\n"})
    (tree / "build").mkdir()
    (tree / "build" / "ext.so").write_bytes(b"\0binary")  # built in the image, ignored by the repository
    root, start, git_dir = workspace_from_tree(tree, tmp_path / "a", keep_tree=False)
    assert git_dir is None and (root / "build" / "ext.so").exists()
    log = subprocess.run(["git", "log", "--all", "--oneline"], cwd=root, capture_output=True, text=True).stdout
    assert len(log.splitlines()) == 1  # the image's own commits are gone
    ws = AttemptWorkspace(root=root, home=tmp_path / "a" / "home", start_commit=start)
    (root / "pkg" / "mod.py").write_text("x = 2\n")
    (root / "build" / "ext.so").write_bytes(b"\0rebuilt")
    patch = workspace_diff(ws)
    assert "pkg/mod.py" in patch and "ext.so" not in patch


def test_harbor_tree_is_kept_exactly(tmp_path: Path) -> None:
    """A Terminal-Bench tree may ship its own repository: it stays, and leaf's repository lives beside it."""
    tree = _repo(tmp_path / "app", {"notes.txt": "a\n"})
    root, start, git_dir = workspace_from_tree(tree, tmp_path / "b", keep_tree=True)
    assert git_dir == tmp_path / "b" / "git" and (root / ".git" / "HEAD").is_file()
    own = subprocess.run(["git", "log", "--oneline"], cwd=root, capture_output=True, text=True).stdout
    assert own.strip().endswith("one")  # the task's own history, untouched
    ws = AttemptWorkspace(root=root, home=tmp_path / "b" / "home", start_commit=start, git_dir=git_dir)
    (root / "answer.txt").write_text("42\n")
    assert "answer.txt" in workspace_diff(ws) and ".git/" not in workspace_diff(ws)


def test_container_paths_map_onto_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x\n")
    ws = ContainerWorkspace(root=tmp_path, alias="/testbed")
    assert ws.resolve("/testbed/pkg/a.py") == (tmp_path / "pkg" / "a.py").resolve()
    assert ws.resolve("/testbed") == tmp_path.resolve() and ws.resolve("pkg/a.py") == (tmp_path / "pkg" / "a.py").resolve()
    with pytest.raises(PermissionError):
        ws.resolve("/testbedx/a.py")
    with pytest.raises(PermissionError):
        ws.resolve("/etc/passwd")


def test_grading_switch(tmp_path: Path) -> None:
    [harbor] = import_harbor(harbor_task_dir(tmp_path / "tasks"))
    assert grader_of(harbor) == "reward" and grader_of(swebench_task()) == "swebench" and is_image_task(harbor)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "answer.txt").write_text("42\n")
    verdict = grade(harbor, "", SubprocessSandbox(), workspace=workspace)  # Harbor on a host sandbox: paths rewritten
    assert verdict.resolved and verdict.grader == "reward" and verdict.reward == 1.0
    assert verdict.patch_applied == "in_workspace"
    with pytest.raises(LeafError, match="use --sandbox docker"):
        grade(swebench_task(), "", SubprocessSandbox())


def test_image_tasks_refuse_host_sandboxes_and_missing_scripts() -> None:
    task = swebench_task()
    with pytest.raises(LeafError, match=r"1 task\(s\) run inside their Docker images .*--sandbox docker"):
        check_image_tasks([task], "bwrap")
    unknown = task.model_copy(update={"eval_script": None})
    with pytest.raises(LeafError, match="has no grading script"):
        check_image_tasks([unknown], "docker")
    check_image_tasks([], "subprocess")  # no image task: nothing to check


def test_without_a_daemon_the_run_stops_at_once(tmp_path: Path) -> None:
    problem = docker_problem()
    if problem is None:
        pytest.skip("[no-docker] a Docker daemon answers here; the no-daemon path cannot be shown")
    task = swebench_task()
    config = EvalConfig(out=tmp_path / "out", sandbox=DockerSandbox(), model_name="replay:x")
    with pytest.raises(LeafError) as raised:
        run_eval([task], lambda: pytest.fail("no engine may start"), config)
    message = str(raised.value)
    assert message.startswith("1 task(s) run inside their Docker images") and "nothing was run" in message
    assert ("daemon" in message or "docker CLI" in message) and "\n" not in message
    assert not (tmp_path / "out").exists()  # no attempt recorded, so none counted unresolved


def test_grading_in_the_image_needs_the_daemon() -> None:
    problem = docker_problem()
    task = swebench_task()
    if problem is not None:
        with pytest.raises(LeafError, match="Docker daemon|docker CLI"):
            grade_in_image(task, "", DockerSandbox())
        pytest.skip(f"[no-docker] no Docker daemon here, so the grading container cannot run: {problem}")
    result = grade_in_image(task, "", DockerSandbox())  # pragma: no cover - needs Docker and the image
    assert not result.resolved and result.grader == "swebench"
