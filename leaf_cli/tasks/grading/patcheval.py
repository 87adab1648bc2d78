"""PatchEval's grading (its `run_evaluation.py`): a fresh container of the task's image gets the model's patch
at /workspace/fix.patch; `prepare.sh` then `fix-run.sh` (the proof of concept no longer works), and only then
`prepare.sh` again and `unit_test.sh` (nothing else broke; a task without one passes). Strict success needs
both; the PoC-only outcome is kept beside it (`rewards`: strict, poc), so both of PatchEval's rates come out.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from leaf_cli.tasks.envs.proc import RunResult
from leaf_cli.tasks.envs.sandbox import Sandbox
from leaf_cli.tasks.envs.verifier_runs import run_in_image, run_on_host
from leaf_cli.tasks.format.reward_spec import RewardSpec
from leaf_cli.tasks.format.task import Task


def run_patcheval(task: Task, spec: RewardSpec, sandbox: Sandbox, scratch: Path, workspace: Path | None,
                  patch: str) -> RunResult:
    """PatchEval's scripts with `patch`, in a fresh container of its image (the host sandboxes refuse it)."""
    if sandbox.name == "docker":
        return run_in_image(task, spec, sandbox, scratch, workspace, patch)
    return run_on_host(task, spec, sandbox, scratch, workspace)


PATCHEVAL_SCRIPT = """cd {workspace}
timeout {t} bash prepare.sh
timeout {t} bash fix-run.sh; poc=$?
echo "{poc_marker} $poc"
if [ "$poc" -eq 0 ]; then
  timeout {t} bash prepare.sh
  if ls unit_test.sh >/dev/null 2>&1; then timeout {t} bash unit_test.sh; unit=$?; else unit=none; fi
  echo "{unit_marker} $unit"
fi
"""
POC_MARKER, UNIT_MARKER = ">>>>> PatchEval PoC exit:", ">>>>> PatchEval unit tests exit:"


def patcheval_command(timeout_s: float = 600, workspace: str = "/workspace") -> str:
    """PatchEval's strict check, in one container: prepare + fix-run, then (only when the PoC is fixed)
    prepare + unit_test, each bounded as its evaluator bounds them (`timeout 600`), from `workspace`."""
    return PATCHEVAL_SCRIPT.format(t=int(timeout_s), workspace=shlex.quote(workspace), poc_marker=POC_MARKER,
                                   unit_marker=UNIT_MARKER)


def patcheval_rewards(output: str) -> dict[str, float] | None:
    """{"strict", "poc"} from the markers the command printed; None when the PoC never ran."""
    poc = re.findall(re.escape(POC_MARKER) + r" (\S+)", output)
    if not poc:
        return None
    unit = re.findall(re.escape(UNIT_MARKER) + r" (\S+)", output)
    poc_ok = poc[-1] == "0"
    unit_ok = bool(unit) and unit[-1] in ("0", "none")  # no unit_test.sh: nothing else to break
    return {"strict": float(poc_ok and unit_ok), "poc": float(poc_ok)}
