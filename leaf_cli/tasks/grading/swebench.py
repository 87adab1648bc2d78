"""SWE-bench and SWE-bench Pro grading, as their official harnesses do it, in a fresh container of the image.

SWE-bench: the patch goes in with swebench 5.0.2's ladder (`patches.LADDER`: reset between rungs, the
reverse check last), then the task's grading script (the row's own `eval_script`, or the one the importer
wrote as the official harness does: install re-run, test files reset, `test_patch` applied, the test
command between start/end markers, its exit code echoed) runs; the whole log is kept and judged as
5.0.2's `get_logs_eval` and `get_eval_tests_report` judge it: the harness's failure lines or missing
markers void it, the marked section is parsed (the whole log when that finds nothing), an empty map is
no evidence, a log without a failure whose command exited non-zero is rejected; then every FAIL_TO_PASS
must pass (PASSED or XFAIL) and every PASS_TO_PASS pass or be skipped, or under the row's `fail_only`
type merely not fail.
SWE-bench Pro: the repository is reset to `base_commit`, the patch applied with `git apply -v` (binary hunks
dropped, as Pro's harness does), the importer's script runs the instance's `run_script.sh` and its
`parser.py` into /workspace/output.json; when the image cannot run the parser, leaf runs it on the logs.
"""

from __future__ import annotations

import re
import shlex
import tempfile
import uuid
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.tasks.envs.image import docker, docker_env, ensure_image, image_of, workdir_of
from leaf_cli.tasks.grading.log_parsers import (BAD_RUN_MARKERS, ERROR, FAILED, GOOD, SKIPPED, END_MARKER, START_MARKER,
                                        exit_code, get_parser, lookup, parse_pro_output, run_pro_parser, test_section)
from leaf_cli.tasks.grading.patches import LADDER, REVERSE_CHECK, Applied
from leaf_cli.tasks.envs.proc import run_process
from leaf_cli.tasks.envs.sandbox import Sandbox
from leaf_cli.tasks.format.task import Task
from leaf_cli.tasks.grading.verdict import GradeResult

APPLIED = ">>>>> Applied Patch"
APPLY_FAILED = ">>>>> Patch Apply Failed"
RESET = "git checkout -- . ; git clean -fd"
"""The official reset between rungs (untracked files the failed rung made go; ignored ones stay)."""
OUTCOME = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "SKIPPED": "skipped", "XFAIL": "xfailed"}


def apply_script(workdir: str, patch_file: str, ladder: list[tuple[str, list[str]]] | None = None) -> str:
    """Shell lines that apply `patch_file` in `workdir` with the first rung that works (the tree reset
    before each later rung), then the reverse check, and say which; exit 97 when nothing applied."""
    quoted = shlex.quote(patch_file)
    rungs = ladder if ladder is not None else [(how.value, argv) for how, argv in LADDER]
    lines = [f"cd {shlex.quote(workdir)}", "leaf_applied="]
    for index, (name, argv) in enumerate(rungs):
        reset = f"{RESET} ; " if index else ""
        lines.append(f'if [ -z "$leaf_applied" ]; then {reset}{shlex.join(argv)} {quoted} && leaf_applied={name}; fi')
    if ladder is None:
        lines.append(f'if [ -z "$leaf_applied" ]; then {shlex.join(REVERSE_CHECK)} {quoted} '
                     f'&& leaf_applied={Applied.ALREADY_APPLIED.value}; fi')
    lines += [f'if [ -z "$leaf_applied" ]; then echo "{APPLY_FAILED}"; exit 97; fi',
              f'echo "{APPLIED} ($leaf_applied)"']
    return "\n".join(lines) + "\n"


def grading_script(task: Task, has_patch: bool) -> str:
    """The whole script a fresh container runs (from the mounted /leaf folder, or /workspace for Pro)."""
    extra = task.model_extra or {}
    pro = extra.get("eval_type") == "swebench_pro"
    folder = "/workspace" if pro else "/leaf"
    lines = ["#!/bin/bash"]
    if pro:
        lines += [f"cd {shlex.quote(workdir_of(task))}", f"git reset --hard {shlex.quote(task.base_commit)}",
                  f"git checkout {shlex.quote(task.base_commit)}"]
    if has_patch:
        ladder = [("git_apply", ["git", "apply", "-v"])] if pro else None
        lines.append(apply_script(workdir_of(task), f"{folder}/patch.diff", ladder))
    lines.append(f"bash {folder}/eval.sh")
    return "\n".join(lines) + "\n"


def strip_binary_hunks(patch: str) -> str:
    """The patch without binary file sections (Pro's harness drops them before `git apply`)."""
    pieces = re.split(r"(?=^diff --git )", patch, flags=re.MULTILINE)
    keep = [p for p in pieces if p.strip() and not re.search(r"^(Binary files .* differ|GIT binary patch)$", p, re.MULTILINE)]
    return "".join(keep)


def grade_in_image(task: Task, patch: str, sandbox: Sandbox, *, p2p_skip_ok: bool = False,
                   log_path: Path | None = None) -> GradeResult:
    """Grade `patch` with the benchmark's own script in a fresh container of the task's image."""
    extra = task.model_extra or {}
    kind = str(extra.get("eval_type"))
    if sandbox.name != "docker":
        raise LeafError(f"{task.instance_id} is graded inside its image {image_of(task)}; use --sandbox docker")
    if not extra.get("eval_script"):
        raise LeafError(f"{task.instance_id} has no grading script (eval_script); re-import it")
    sandbox.prepare()  # no daemon: one LeafError naming what is missing, before anything runs
    image = ensure_image(task)
    pro = kind == "swebench_pro"
    patch = strip_binary_hunks(patch) if pro else patch
    with tempfile.TemporaryDirectory(prefix="leaf-image-grade-") as tmp:
        folder = Path(tmp)
        (folder / "eval.sh").write_text(str(extra["eval_script"]), encoding="utf-8")
        (folder / "grade.sh").write_text(grading_script(task, bool(patch.strip())), encoding="utf-8")
        if patch.strip():
            (folder / "patch.diff").write_text(patch if patch.endswith("\n") else patch + "\n", encoding="utf-8")
        if pro:
            (folder / "run_script.sh").write_text(str(extra.get("run_script") or ""), encoding="utf-8")
            (folder / "parser.py").write_text(str(extra.get("parser_script") or ""), encoding="utf-8")
        mount = "/workspace" if pro else "/leaf"
        name = f"leaf-grade-{uuid.uuid4().hex[:12]}"
        argv = ["docker", "run", "--rm", "--name", name, "--network", "none", "-v", f"{folder}:{mount}",
                "--entrypoint", "bash", image, "-c", f"bash {mount}/grade.sh > {mount}/grade.log 2>&1"]
        run = run_process(argv, cwd=folder, timeout=task.timeouts.test_s + 120, env=docker_env())
        if run.timed_out:
            docker(["rm", "-f", name], timeout=120, check=False)
        log = _read(folder / "grade.log")
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.write_text(log, encoding="utf-8")
        base = GradeResult(instance_id=task.instance_id, resolved=False, patch_applied="empty", sandbox="docker",
                           grader=kind, test_seconds=run.seconds, log_path=str(log_path) if log_path else None)
        if run.timed_out:
            base.error = f"grading timed out after {task.timeouts.test_s + 120:.0f} s"
            return base
        if not log and not run.ok:
            base.infra_failure, base.error = "harness", f"docker run failed: {(run.stderr.strip())[-300:]}"
            return base
        if pro:
            return pro_verdict(task, base, log, folder, p2p_skip_ok=p2p_skip_ok)
        return swebench_verdict(task, base, log)  # the official rule, whatever leaf's own default is


def _applied(base: GradeResult, log: str) -> bool:
    """Read which rung applied the patch; False (and the verdict filled) when none did."""
    if APPLY_FAILED in log:
        base.patch_applied, base.error = "failed", "the patch does not apply"
        base.apply_log = log.split(APPLY_FAILED)[0][-2000:]
        return False
    match = re.search(re.escape(APPLIED) + r" \((\w+)\)", log)
    base.patch_applied = match.group(1) if match else "empty"
    return True


def swebench_verdict(task: Task, base: GradeResult, log: str, *, p2p_skip_ok: bool = True) -> GradeResult:
    """The verdict from a SWE-bench grading log, as swebench 5.0.2 reaches it. `p2p_skip_ok` is the
    official rule (a skipped PASS_TO_PASS is maintained); False makes it strict."""
    if not _applied(base, log):
        return base
    bad = [marker for marker in BAD_RUN_MARKERS if marker in log]
    section = test_section(log)
    if bad or section is None:
        base.infra_failure = "no_report"
        base.error = (f"the log says {bad[0]!r}" if bad else
                      f"the log has no {START_MARKER!r} / {END_MARKER!r} markers: the tests did not run")
        return base
    try:
        parser = get_parser(task.install_config.log_parser)
    except KeyError as exc:
        base.infra_failure, base.error = "harness", str(exc.args[0])
        return base
    found = parser(section) or parser(log)  # some runners print outside the markers
    base.exit_code = exit_code(log)
    fail_only = (task.model_extra or {}).get("swebench_eval_type") == "fail_only"
    base.f2p = {t: _outcome(found, t) for t in task.FAIL_TO_PASS}
    base.p2p = {t: _outcome(found, t) for t in task.PASS_TO_PASS}
    if not found:
        base.infra_failure, base.error = "no_report", "the test log holds no test results"
        return base
    if base.exit_code not in (0, None) and not any(s in (FAILED, ERROR) for s in found.values()):
        base.error = f"the log shows no failure but the tests exited {base.exit_code}"  # v5: fake PASSED lines
        return base
    failed_f2p = [t for t in task.FAIL_TO_PASS if _fails(found, t, fail_only=fail_only, skip_ok=False)]
    failed_p2p = [t for t in task.PASS_TO_PASS if _fails(found, t, fail_only=fail_only, skip_ok=p2p_skip_ok)]
    base.resolved = not failed_f2p and not failed_p2p
    return base


def _outcome(found: dict[str, str], test_id: str) -> str:
    key = lookup(found, test_id)
    return OUTCOME.get(found[key], found[key].lower()) if key is not None else "missing"


def _fails(found: dict[str, str], test_id: str, *, fail_only: bool, skip_ok: bool) -> bool:
    """Whether `test_id` counts against resolution: under `fail_only` only an exact FAILED does; otherwise a
    missing, failed, errored or (unless `skip_ok`) skipped test does. A test with some other status is
    neither passed nor failed, and the official rate leaves it out."""
    if fail_only:
        return found.get(test_id) == FAILED
    key = lookup(found, test_id)
    if key is None:
        return True
    status = found[key]
    return status not in GOOD and (status in (FAILED, ERROR) or (status == SKIPPED and not skip_ok))


def pro_verdict(task: Task, base: GradeResult, log: str, folder: Path, *, p2p_skip_ok: bool = False) -> GradeResult:
    """The verdict from SWE-bench Pro's output.json (or its parser run here on the logs)."""
    if not _applied(base, log):
        return base
    output = folder / "output.json"
    try:
        if output.is_file() and output.stat().st_size:
            found = parse_pro_output(output.read_text(encoding="utf-8"))
        elif (folder / "stdout.log").is_file():
            found = run_pro_parser(str((task.model_extra or {}).get("parser_script") or ""),
                                   _read(folder / "stdout.log"), _read(folder / "stderr.log"))
        else:
            found = {}
    except ValueError as exc:
        base.infra_failure, base.error = "no_report", f"cannot read the test results: {exc}"
        return base
    return _decide(task, base, found, p2p_skip_ok=p2p_skip_ok)


def _decide(task: Task, base: GradeResult, found: dict[str, str], *, p2p_skip_ok: bool) -> GradeResult:
    """Pro's rule: every FAIL_TO_PASS and PASS_TO_PASS test among the passed ones."""
    base.f2p = {t: _outcome(found, t) for t in task.FAIL_TO_PASS}
    base.p2p = {t: _outcome(found, t) for t in task.PASS_TO_PASS}
    if not found:
        base.infra_failure, base.error = "no_report", "the test log holds no test results"
        return base
    base.resolved = base.tests_pass(p2p_skip_ok)
    return base


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""

