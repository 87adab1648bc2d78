"""PatchEval vulnerability-repair records -> leaf tasks graded as PatchEval grades them (bytedance/PatchEval).

Three shapes of record are read:
- the dataset card's schema (`patcheval/datasets/input.json`, the Hugging Face card): `cve_id`,
  `cve_description`, `cwe_info`, `repo`, `patch_url`, `programming_language` (older files: the misspelt
  `programing_language`), `vul_func`, `fix_func`, `vul_patch`, `poc_test_cmd`. No image field: the image is
  derived as PatchEval's evaluator derives it, `ghcr.io/anonymous2578-data/<cve, lower case>:latest`; a
  record whose `poc_test_cmd` is null has no sandbox and is refused;
- `patcheval_verified.json`, the same plus `image_url` (used as given);
- the agent experiments' rows (`exp_agent/sweagent/dataset.jsonl`): `cve_id`, `image_name`, `work_dir`, a
  ready `problem_statement`, an empty `fix_patch`. Their language is not in the row; it is read from the
  statement's vulnerable file paths.
A record without `work_dir` works in /workspace/<repository name>, where the images keep the repository.

Grading is PatchEval's strict success (`grading/patcheval.py`): prepare.sh + fix-run.sh, then prepare.sh + unit_test.sh;
both its rates (strict, PoC-only) are reported. The gold fix (`vul_patch`, `fix_func`) is kept as the task's
`patch` for `leaf eval grade --gold`, never in the statement, and the container hides /workspace's scripts
from the agent (`envs.image.ImageSession`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from leaf_cli.errors import LeafError
from leaf_cli.tasks.format.reward_spec import RewardSpec
from leaf_cli.tasks.grading.patcheval import patcheval_command
from leaf_cli.tasks.format.task import Task

PATCH_PATH = "/workspace/fix.patch"
IMAGE = "ghcr.io/anonymous2578-data/{cve}:latest"
"""The image PatchEval's `run_evaluation.py` runs each CVE in, when the record names none."""
EXTENSIONS = {".go": "Go", ".js": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript", ".ts": "JavaScript",
              ".py": "Python"}
HIDDEN_KEYS = ("vul_patch", "fix_func", "patch_url", "fix_patch")
"""Columns that are (or point at) the answer: kept off the task's visible fields."""


def import_patcheval_rows(rows: list[dict[str, Any]], card: list[dict[str, Any]] | None = None) -> list[Task]:
    """Convert PatchEval records of any of the three shapes. `card` (records that name their language, e.g.
    patcheval_verified.json) gives agent rows their language, as PatchEval's own scripts look it up."""
    languages = {str(r.get("cve_id", "")).upper(): r.get("programming_language") or r.get("programing_language")
                 for r in card or []}
    tasks = []
    for number, row in enumerate(rows, 1):
        cve = row.get("cve_id") or row.get("cve")
        if not cve:
            raise LeafError(f"record {number}: no cve_id (is this a PatchEval dataset?)")
        if "poc_test_cmd" in row and row["poc_test_cmd"] is None and not (row.get("image_url") or row.get("image_name")):
            raise LeafError(f"record {number} ({cve}): poc_test_cmd is null, so PatchEval has no sandbox to grade it in")
        image = row.get("image_url") or row.get("image_name") or IMAGE.format(cve=str(cve).lower())
        tasks.append(_task(row, str(cve).upper(), str(image), languages.get(str(cve).upper())))
    return tasks


def _task(row: dict[str, Any], cve: str, image: str, card_language: str | None = None) -> Task:
    vulnerable = row.get("vul_func") or []
    workdir = str(row.get("work_dir") or row.get("workdir") or work_dir_of(str(row.get("repo") or "")))
    statement = str(row.get("problem_statement") or "").strip() and str(row["problem_statement"])
    statement = statement or card_statement(row, workdir)
    language = (row.get("programming_language") or row.get("programing_language") or card_language
                or language_of(statement))
    spec = RewardSpec(kind="patcheval", command=patcheval_command(), workdir=workdir, patch_path=PATCH_PATH,
                      success="patcheval", timeout_s=1800.0)
    data = {k: v for k, v in row.items() if k not in HIDDEN_KEYS}
    data.update({
        "instance_id": cve, "repo": str(row.get("repo") or ""),
        "base_commit": str(vulnerable[0].get("commit", "")) if vulnerable else "",
        "problem_statement": statement, "patch": str(row.get("vul_patch") or row.get("fix_patch") or ""),
        "FAIL_TO_PASS": [], "image_name": image, "workdir": workdir, "eval_type": "reward",
        "reward": spec.model_dump(),
        "source": {"kind": "patcheval", "upstream_id": cve, "language": language},
        "protected_paths": [],
    })
    return Task.model_validate(data)


def work_dir_of(repo: str) -> str:
    """Where a PatchEval image keeps the repository: /workspace/<repository name> (so its agent rows say,
    224 of 224 that name a repository), the scripts in /workspace above it."""
    name = repo.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    return f"/workspace/{name}" if name else "/workspace"


def card_statement(row: dict[str, Any], workdir: str) -> str:
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


def language_of(statement: str) -> str | None:
    """The language of the files a statement locates (`"file_path": "src/unix.js"`), the most named one."""
    counts: dict[str, int] = {}
    for path in re.findall(r'"file_path":\s*("(?:[^"\\]|\\.)*")', statement):
        name = json.loads(path)
        suffix = name[name.rfind("."):] if "." in name else ""
        if suffix in EXTENSIONS:
            counts[EXTENSIONS[suffix]] = counts.get(EXTENSIONS[suffix], 0) + 1
    return max(counts, key=counts.get) if counts else None
