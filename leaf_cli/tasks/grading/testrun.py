"""Run a task's F2P and P2P tests by exact node id and read the outcomes from leaf's pytest plugin."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

from leaf_cli.tasks.envs.venv import Environment
from leaf_cli.tasks.grading.pytest_plugin import PLUGIN_DIR, PLUGIN_NAME
from leaf_cli.tasks.envs.sandbox import Sandbox

GOOD = {"passed", "xfailed"}
"""Outcomes that count as passing (SWE-bench: PASSED or XFAIL)."""


class TestRun(BaseModel):
    """Per-node-id outcomes ("missing" when never collected) and the evidence that the suite ran."""

    outcomes: dict[str, str] = Field(default_factory=dict)
    started: bool = False
    finished: bool = False
    selected: int = 0
    exit_code: int | None = None
    reported_exit: int | None = None
    timed_out: bool = False
    seconds: float = 0.0
    output_tail: str = ""


def run_tests(tree: Path, scratch: Path, node_ids: list[str], env: Environment, sandbox: Sandbox,
              timeout: float) -> TestRun:
    """Run `node_ids` in `tree` with the environment's interpreter, network off, and read the report."""
    select, report = scratch / "select.json", scratch / "report.jsonl"
    select.write_text(json.dumps(node_ids), encoding="utf-8")
    files = sorted({nid.split("::")[0] for nid in node_ids if (tree / nid.split("::")[0]).exists()})
    home = scratch / "home"
    home.mkdir(exist_ok=True)
    roots = [str(tree / "src")] if (tree / "src").is_dir() else []
    variables = {
        "PATH": f"{env.bin}:/usr/local/bin:/usr/bin:/bin", "VIRTUAL_ENV": str(env.path), "HOME": str(home),
        "TMPDIR": str(home), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
        "PYTHONPATH": ":".join([str(PLUGIN_DIR), *roots, str(tree)]), "PIP_NO_INDEX": "1",
    }
    argv = [sandbox.python(env.python), "-m", "pytest", "-p", PLUGIN_NAME, f"--leaf-select={select}",
            f"--leaf-report={report}", "-p", "no:cacheprovider", "--continue-on-collection-errors",
            f"--rootdir={tree}", "-q", "--tb=short", *files]
    if not files:
        return TestRun(outcomes={nid: "missing" for nid in node_ids})
    result = sandbox.run(argv, cwd=tree, timeout=timeout, env=variables, writable=[tree, scratch],
                         readonly=[env.path.parent, PLUGIN_DIR])
    run = read_report(report, node_ids)
    run.exit_code, run.timed_out, run.seconds = result.returncode, result.timed_out, result.seconds
    run.output_tail = (result.stdout + result.stderr)[-4000:]
    return run


def read_report(path: Path, node_ids: list[str]) -> TestRun:
    """Fold the plugin's JSON lines into one outcome per requested id; a torn last line is ignored."""
    run = TestRun()
    seen: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        event = record.get("event")
        if event == "start":
            run.started = True
        elif event == "test":
            seen[record["nodeid"]] = record["outcome"]
        elif event == "collect_error":
            for nid in node_ids:
                if nid.split("::")[0] == record.get("nodeid"):
                    seen.setdefault(nid, "error")
        elif event == "finish":
            run.finished, run.reported_exit, run.selected = True, record.get("exitstatus"), record.get("selected", 0)
    run.outcomes = {nid: seen.get(nid, "missing") for nid in node_ids}
    return run
