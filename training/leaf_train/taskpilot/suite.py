"""Run a snapshot's pytest suite (or some of its node ids) in the sandbox and read exact per-test outcomes.

Uses the eval machinery's cached environment and sandbox; the outcomes come from TaskPilot's probe
plugin (exact node ids, crash messages for statements, and optionally which functions each test calls).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pydantic import BaseModel, Field

from leaf_cli.tasks import Environment, Sandbox

PROBE_DIR = Path(__file__).parent / "probe"
PASSING = {"passed", "xfailed"}  # SWE-bench semantics: XFAIL counts as OK


class TestOutcome(BaseModel):
    outcome: str
    message: str | None = None


class SuiteResult(BaseModel):
    """One pytest run: outcome per node id, the seconds it took, and why it did not run if it did not."""

    tests: dict[str, TestOutcome] = Field(default_factory=dict)
    cover: dict[str, list[tuple[str, int, str]]] = Field(default_factory=dict)
    seconds: float = 0.0
    exit_code: int | None = None
    timed_out: bool = False
    error: str | None = None
    collect_errors: dict[str, str] = Field(default_factory=dict, description="Test file -> import error.")

    def passing(self) -> set[str]:
        return {t for t, o in self.tests.items() if o.outcome in PASSING}

    def ran(self) -> bool:
        """pytest started and reported: exit 0 (all passed) or 1 (some failed), and the report exists."""
        return self.error is None and self.exit_code in (0, 1) and bool(self.tests)


def run_suite(tree: Path, env: Environment, sandbox: Sandbox, *, tests: list[str], timeout: float,
              trace: bool = False) -> SuiteResult:
    """Run pytest in `tree` on `tests` (all of the suite when empty) with no network.

    The tree's own code comes first on PYTHONPATH (the eval machinery's convention, so a stale install
    in the venv cannot shadow it). `trace` also records which tree functions each test calls.
    """
    scratch = tree / ".leaf"
    scratch.mkdir(exist_ok=True)
    report = scratch / "probe.json"
    report.unlink(missing_ok=True)
    home = scratch / "home"
    home.mkdir(exist_ok=True)
    environ = {
        "PATH": f"{env.bin}:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": f"{PROBE_DIR}:{tree}",
        "HOME": str(home), "TMPDIR": str(scratch), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0", "LEAF_PROBE_OUT": str(report),
    }
    if trace:
        environ["LEAF_PROBE_TRACE"] = str(tree)
    argv = [sandbox.python(env.python), "-m", "pytest", "-p", "leaf_taskpilot_probe", "-p", "no:cacheprovider",
            "-q", "--tb=short", "-W", "ignore::DeprecationWarning", "--continue-on-collection-errors", *tests]
    # The venv and the probe plugin are bound read-only: bwrap's private /tmp would hide either if it lives
    # under /tmp (a cache or a checkout there), as the eval machinery's own test runs do.
    run = sandbox.run(argv, cwd=tree, timeout=timeout, env=environ, writable=[tree],
                      readonly=[env.path.parent, PROBE_DIR])
    result = SuiteResult(seconds=run.seconds, exit_code=run.returncode, timed_out=run.timed_out)
    if run.timed_out:
        result.error = f"the suite ran past {timeout:.0f} s"
    elif not report.is_file():
        result.error = f"pytest exited {run.returncode} without a report: {(run.stdout + run.stderr).strip()[-500:]}"
    else:
        data = json.loads(report.read_text(encoding="utf-8"))
        result.tests = {k: TestOutcome(**v) for k, v in data["tests"].items()}
        result.collect_errors = {k: v.message or "" for k, v in result.tests.items() if "::" not in k}
        result.tests = {k: v for k, v in result.tests.items() if "::" in k or v.outcome != "error"}
        result.cover = {k: [tuple(x) for x in v] for k, v in data.get("cover", {}).items()}
        if not result.tests:
            result.error = f"pytest collected no tests (exit {run.returncode})"
        elif run.returncode not in (0, 1):
            result.error = f"pytest exited {run.returncode} (collection or usage error): {run.stdout.strip()[-500:]}"
    shutil.rmtree(scratch, ignore_errors=True)
    return result
