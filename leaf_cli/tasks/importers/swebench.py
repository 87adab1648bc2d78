"""SWE-bench Verified / Lite / full and SWE-bench Pro rows -> leaf tasks that run on the official images.

SWE-bench rows get the official per-instance image (`swebench/sweb.eval.x86_64.<id>:latest`, `__` written
`_1776_`, lower-cased), the repository's test command and log parser from the harness table
(`swebench_specs`) and a grading script. Rows of swebench 5's re-releases carry their own `image`,
`eval_script`, `log_parser` and `eval_type` (pass_and_fail | fail_only): those win over the table, as the
official harness uses them (the row's `eval_type` is kept as `swebench_eval_type`; leaf's `eval_type`
names the grader). Pro rows keep their extra columns and get the dataset's own image
(`jefzda/sweap-images:<dockerhub_tag>`, repository at /app); Pro grades with its per-instance
`run_script.sh` and `parser.py`, embedded when `pro_scripts` points at the `run_scripts/` folder of
scaleapi/SWE-bench_Pro-os.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from leaf_cli.errors import LeafError
from leaf_cli.tasks.importers.rows import string_list
from leaf_cli.tasks.importers.swebench_specs import directives, eval_script, own_eval_script, repo_spec
from leaf_cli.tasks.grading.log_parsers import parser_key
from leaf_cli.tasks.format.task import Task

SWEBENCH_IMAGE = "swebench/sweb.eval.x86_64.{key}:latest"
PRO_IMAGE = "jefzda/sweap-images:{tag}"
PRO_COLUMNS = ("dockerhub_tag", "selected_test_files_to_run", "before_repo_set_cmd")
REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement")


def swebench_image(instance_id: str) -> str:
    """The official instance image name: `__` becomes `_1776_`, all lower case, tag `latest`."""
    return SWEBENCH_IMAGE.format(key=instance_id.replace("__", "_1776_").lower())


def is_pro_row(row: dict[str, Any]) -> bool:
    """SWE-bench Pro rows carry Pro's own columns (image tag, selected test files)."""
    return any(column in row for column in PRO_COLUMNS)


def import_swebench_rows(rows: list[dict[str, Any]], *, dataset: str = "auto",
                         pro_scripts: Path | None = None) -> list[Task]:
    """Convert rows; `dataset` is verified|lite|full|pro or auto (Pro recognised by its columns)."""
    tasks = []
    for number, row in enumerate(rows, 1):
        missing = [k for k in REQUIRED if not row.get(k)]
        if missing:
            raise LeafError(f"row {number}: missing {', '.join(missing)} (is this a SWE-bench dataset?)")
        pro = dataset == "pro" or (dataset == "auto" and is_pro_row(row))
        try:
            tasks.append(_pro_task(row, pro_scripts) if pro else _swebench_task(row, dataset))
        except LeafError as exc:
            raise LeafError(f"row {number} ({row['instance_id']}): {exc}") from None
    return tasks


def _common(row: dict[str, Any], f2p_key: str, p2p_key: str) -> dict[str, Any]:
    """The row with leaf's field names; every column the row had is kept."""
    data = dict(row)
    data["FAIL_TO_PASS"] = string_list(row.get(f2p_key), f2p_key)
    data["PASS_TO_PASS"] = string_list(row.get(p2p_key), p2p_key)
    data["repo"] = f"https://github.com/{row['repo']}"
    data["patch"] = row.get("patch") or ""
    data["test_patch"] = row.get("test_patch") or ""
    data["version"] = str(row.get("version") or "")
    return data


def _swebench_task(row: dict[str, Any], dataset: str) -> Task:
    data = _common(row, "FAIL_TO_PASS", "PASS_TO_PASS")
    spec = repo_spec(row["repo"], data["version"])
    data.update(
        image_name=str(row.get("image") or swebench_image(row["instance_id"])), workdir="/testbed",
        eval_type="swebench", swebench_eval_type=str(row.get("eval_type") or "pass_and_fail"),
        test_files=directives(row["repo"], data["test_patch"]),
        source={"kind": "swebench", "dataset": dataset, "upstream_id": row["instance_id"], "repo": row["repo"]},
        protected_paths=[],  # the official harness resets the test files itself
    )
    if data["swebench_eval_type"] not in ("pass_and_fail", "fail_only"):
        raise LeafError(f"eval_type {data['swebench_eval_type']!r} is not pass_and_fail or fail_only")
    parser = row.get("log_parser") or (f"swebench:{spec.log_parser}" if spec else None)
    if parser is not None:
        if parser_key(str(parser)) is None:
            raise LeafError(f"log_parser {parser!r} is not a log format leaf reads (the Python repositories' are)")
        data["install_config"] = {"test_cmd": spec.test_cmd if spec else "", "log_parser": str(parser)}
    if row.get("eval_script"):
        data["eval_script"] = own_eval_script(str(row["eval_script"]))
    elif spec is not None:
        data["eval_script"] = eval_script(row["repo"], row["base_commit"], data["test_patch"], spec)
    return Task.model_validate(data)


def _pro_task(row: dict[str, Any], pro_scripts: Path | None) -> Task:
    f2p = "fail_to_pass" if "fail_to_pass" in row else "FAIL_TO_PASS"
    p2p = "pass_to_pass" if "pass_to_pass" in row else "PASS_TO_PASS"
    data = _common(row, f2p, p2p)
    tag = row.get("dockerhub_tag")
    image = row.get("image_name") or (PRO_IMAGE.format(tag=tag) if tag else None)
    if not image:
        raise LeafError("a SWE-bench Pro row needs `dockerhub_tag` (or `image_name`) to name its image")
    selected = string_list(row.get("selected_test_files_to_run"), "selected_test_files_to_run")
    data.update(
        image_name=image, workdir="/app", eval_type="swebench_pro", test_files=selected,
        source={"kind": "swebench_pro", "dataset": "pro", "upstream_id": row["instance_id"], "repo": row["repo"]},
        protected_paths=[], problem_statement=_pro_statement(row),
    )
    data["install_config"] = {"log_parser": "swebench_pro:parser.py"}
    if pro_scripts is not None:
        folder = Path(pro_scripts) / row["instance_id"]
        run_script, parser = folder / "run_script.sh", folder / "parser.py"
        if not (run_script.is_file() and parser.is_file()):
            raise LeafError(f"{folder} lacks run_script.sh or parser.py (pass the run_scripts/ folder of "
                            "scaleapi/SWE-bench_Pro-os)")
        data["run_script"] = run_script.read_text(encoding="utf-8")
        data["parser_script"] = parser.read_text(encoding="utf-8")
        data["eval_script"] = _pro_eval_script(row, selected)
    return Task.model_validate(data)


def _pro_statement(row: dict[str, Any]) -> str:
    """Pro's agents see the requirements and the interface beside the issue text."""
    parts = [str(row["problem_statement"]).strip()]
    for title, key in (("Requirements", "requirements"), ("Interface", "interface")):
        if str(row.get(key) or "").strip():
            parts.append(f"## {title}\n\n{str(row[key]).strip()}")
    return "\n\n".join(parts) + "\n"


def _pro_eval_script(row: dict[str, Any], selected: list[str]) -> str:
    """Pro's grading: the last line of `before_repo_set_cmd` checks out the tests, `run_script.sh` runs the
    selected test files (comma-joined), `parser.py` turns its output into /workspace/output.json. leaf
    writes the two scripts to /workspace before running this."""
    setup = str(row.get("before_repo_set_cmd") or "").strip().splitlines()
    return "\n".join([
        "#!/bin/bash", "cd /app", *(setup[-1:]),
        f"bash /workspace/run_script.sh {','.join(selected)} > /workspace/stdout.log 2> /workspace/stderr.log",
        "python /workspace/parser.py /workspace/stdout.log /workspace/stderr.log /workspace/output.json",
    ]) + "\n"
