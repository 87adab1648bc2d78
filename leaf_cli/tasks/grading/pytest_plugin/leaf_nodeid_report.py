"""pytest plugin: run only the selected node ids and write each one's outcome as JSON lines.

Loaded by leaf's grader with `-p leaf_nodeid_report --leaf-select IDS.json --leaf-report OUT.jsonl`.
Lines: {"event": "start"}, {"event": "test", "nodeid", "outcome"} per test, {"event": "collect_error",
"nodeid"}, {"event": "finish", "exitstatus", "selected"}. Outcomes: passed, failed, error, skipped,
xfailed, xpassed. Standard library only: it runs inside the task's own environment.
"""

import json
import os


def pytest_addoption(parser):
    group = parser.getgroup("leaf")
    group.addoption("--leaf-select", default=None, help="JSON list of node ids to run (others deselected)")
    group.addoption("--leaf-report", default=None, help="JSON-lines file to write outcomes to")


def pytest_configure(config):
    path = config.getoption("leaf_report")
    if path:
        config.pluginmanager.register(_Recorder(path, config.getoption("leaf_select")), "leaf-recorder")


class _Recorder:
    def __init__(self, path, select_path):
        self.path = path
        self.wanted = None
        if select_path:
            with open(select_path, encoding="utf-8") as f:
                self.wanted = set(json.load(f))
        self.selected = 0

    def _write(self, record):
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def pytest_sessionstart(self, session):
        self._write({"event": "start"})

    def pytest_collectreport(self, report):
        if report.failed:
            self._write({"event": "collect_error", "nodeid": report.nodeid})

    def pytest_collection_modifyitems(self, session, config, items):
        if self.wanted is not None:
            keep = [item for item in items if item.nodeid in self.wanted]
            dropped = [item for item in items if item.nodeid not in self.wanted]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
            items[:] = keep
        self.selected = len(items)

    def pytest_runtest_logreport(self, report):
        outcome = _outcome(report)
        if outcome is not None:  # setup/call/teardown each report; the reader keeps the last one
            self._write({"event": "test", "nodeid": report.nodeid, "when": report.when, "outcome": outcome})

    def pytest_sessionfinish(self, session, exitstatus):
        self._write({"event": "finish", "exitstatus": int(exitstatus), "selected": self.selected})


def _outcome(report):
    """The test's outcome as of this phase, or None when the phase says nothing new."""
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            return "xpassed" if xfail else "passed"
        if report.failed:
            return "failed"
        return "xfailed" if xfail else "skipped"
    if report.failed:
        return "error"
    if report.skipped:
        return "xfailed" if xfail else "skipped"
    return None
