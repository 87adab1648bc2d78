"""PatchEval vulnerability-repair records -> leaf tasks graded by PatchEval's own scripts.

A record (bytedance/PatchEval `patcheval/datasets/patcheval_verified.json`) names a CVE, its description
and CWE classes, the repository, the vulnerable functions and the task's Docker image. Grading follows
PatchEval's evaluator: a fresh container of that image, the model's patch at /workspace/fix.patch, then
`cd /workspace && bash fix-run.sh`; exit 0 means the proof of concept no longer succeeds and the unit tests
pass (strict success). Records without an image cannot be graded and are refused.
"""

from __future__ import annotations

from typing import Any

from leaf_cli.errors import LeafError
from leaf_cli.tasks.reward import RewardSpec
from leaf_cli.tasks.task import Task

GRADE_COMMAND = "cd /workspace && bash fix-run.sh"
PATCH_PATH = "/workspace/fix.patch"


def import_patcheval_rows(rows: list[dict[str, Any]]) -> list[Task]:
    """Convert PatchEval records; the 230 sandboxed CVEs of PatchEval-Verified all carry `image_url`."""
    tasks = []
    for number, row in enumerate(rows, 1):
        cve = row.get("cve_id") or row.get("cve")
        if not cve:
            raise LeafError(f"record {number}: no cve_id (is this a PatchEval dataset?)")
        image = row.get("image_url") or row.get("image_name")
        if not image:
            raise LeafError(f"record {number} ({cve}): no image_url; PatchEval grades only its sandboxed CVEs")
        tasks.append(_task(row, str(cve), str(image)))
    return tasks


def _task(row: dict[str, Any], cve: str, image: str) -> Task:
    vulnerable = row.get("vul_func") or []
    workdir = str(row.get("workdir") or "/workspace")
    spec = RewardSpec(kind="patcheval", command=GRADE_COMMAND, workdir=workdir, patch_path=PATCH_PATH,
                      success="exit_code", timeout_s=600.0)
    data = dict(row)
    data.update({
        "instance_id": cve, "repo": str(row.get("repo") or ""),
        "base_commit": str(vulnerable[0].get("commit", "")) if vulnerable else "",
        "problem_statement": statement(row, workdir), "patch": "", "FAIL_TO_PASS": [],
        "image_name": image, "workdir": workdir, "eval_type": "reward", "reward": spec.model_dump(),
        "source": {"kind": "patcheval", "upstream_id": cve, "language": row.get("programing_language")},
        "protected_paths": [],
    })
    return Task.model_validate(data)


def statement(row: dict[str, Any], workdir: str) -> str:
    """The repair request: the CVE description and its weakness classes, as PatchEval's agent setting gives
    them. The vulnerable locations, fixed functions and patch URLs are not shown (they localize or are the answer)."""
    description = str(row.get("cve_description") or row.get("description") or "").strip()
    lines = [f"Fix the security vulnerability {row.get('cve_id') or row.get('cve')} in the repository at {workdir}.",
             "", description]
    cwes = row.get("cwe_info") or {}
    if isinstance(cwes, dict) and cwes:
        lines += ["", "Weakness classes:"]
        lines += [f"- {cwe}: {(info or {}).get('name') or 'unnamed'}" for cwe, info in cwes.items()]
    lines += ["", "Keep the code's intended behaviour: its unit tests must still pass."]
    return "\n".join(lines) + "\n"
