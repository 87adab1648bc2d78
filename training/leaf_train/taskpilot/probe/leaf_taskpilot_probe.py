"""A pytest plugin TaskPilot loads with `-p leaf_taskpilot_probe` (its folder on PYTHONPATH).

It writes one JSON file (path in LEAF_PROBE_OUT) with, for every test, its exact node id, its outcome and,
for failures, the crash message: the raw material of test-derived problem statements. With LEAF_PROBE_TRACE
set to the repository root it also records which repository functions each test calls (sys.setprofile), so
bugs are injected only into functions that passing tests cover. Standard library only: it runs inside the
snapshot's own environment.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

_RESULTS: dict = {}
_COVER: dict = {}


def _merge(nodeid: str, outcome: str, message: str | None) -> None:
    rank = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 2, "error": 3, "failed": 4}
    old = _RESULTS.get(nodeid)
    if old is None or rank[outcome] > rank[old["outcome"]]:
        _RESULTS[nodeid] = {"outcome": outcome, "message": message}


def pytest_runtest_logreport(report):  # noqa: ANN001 - pytest hook signature
    if type(report).__name__ == "SubtestReport":
        # pytest >= 9 reports a unittest subTest (or `subtests` fixture) failure as its own SUBFAILED report and
        # the test itself as PASSED; leaf's grader (SWE-bench's log parsers) reads only the test's own status.
        # The probe reads it the same way, so validation never calls F2P what grading will score as passing.
        return
    message = None
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(report.longrepr)[-2000:]
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    elif report.when == "call":
        outcome = report.outcome
    elif report.failed:
        outcome = "error"
    elif report.skipped:
        outcome = "skipped"
    else:
        return
    _merge(report.nodeid, outcome, message)


def pytest_collectreport(report):  # noqa: ANN001 - a module that fails to import: its file id, as an error
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        _merge(report.nodeid, "error", crash.message if crash is not None else str(report.longrepr)[-2000:])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):  # noqa: ANN001
    root = os.environ.get("LEAF_PROBE_TRACE")
    if not root:
        yield
        return
    root = os.path.realpath(root) + os.sep
    seen: set = set()

    def profile(frame, event, _arg):  # noqa: ANN001
        if event == "call":
            code = frame.f_code
            if code.co_filename.startswith(root):
                seen.add((code.co_filename[len(root):], code.co_firstlineno, code.co_name))

    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(None)
        _COVER[item.nodeid] = seen


def pytest_sessionfinish(session, exitstatus):  # noqa: ANN001
    path = os.environ.get("LEAF_PROBE_OUT")
    if not path:
        return
    cover = {nodeid: sorted(list(x) for x in seen) for nodeid, seen in _COVER.items()}
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"exitstatus": int(exitstatus), "tests": _RESULTS, "cover": cover}, f)
