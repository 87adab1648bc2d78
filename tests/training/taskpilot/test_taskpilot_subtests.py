"""TaskPilot's suite runner (the probe plugin) and leaf's grader read a unittest `subTest` failure the same
way under the installed pytest (9: the test PASSED plus a SUBFAILED line per failing subtest; 8: FAILED)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from leaf_cli.tasks.grading.log_parsers import parse_pytest
from leaf_train.taskpilot.suite import PASSING, PROBE_DIR

TESTS = '''import unittest


class T(unittest.TestCase):
    def test_sub(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1)

    def test_ok(self):
        self.assertTrue(True)

    def test_plain_fail(self):
        self.assertEqual(1, 2)
'''


def test_probe_and_grader_agree_on_subtests(tmp_path: Path) -> None:
    (tmp_path / "test_units.py").write_text(TESTS)
    env = {**os.environ, "PYTHONPATH": str(PROBE_DIR), "LEAF_PROBE_OUT": str(tmp_path / "probe.json")}
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_units.py"]
    subprocess.run([*base, "-p", "leaf_taskpilot_probe", "-q"], cwd=tmp_path, env=env, capture_output=True,
                   timeout=120)
    probe = json.loads((tmp_path / "probe.json").read_text())["tests"]
    graded = subprocess.run([*base, "-rA"], cwd=tmp_path, capture_output=True, text=True, timeout=120).stdout
    grader = parse_pytest(graded)
    ids = ["test_units.py::T::test_sub", "test_units.py::T::test_ok", "test_units.py::T::test_plain_fail"]
    assert set(ids) <= set(grader) and set(ids) <= set(probe)
    for node in ids:
        assert (probe[node]["outcome"] in PASSING) == (grader[node] in ("PASSED", "XFAIL")), (node, probe[node], grader[node])
    assert probe["test_units.py::T::test_plain_fail"]["outcome"] == "failed"
