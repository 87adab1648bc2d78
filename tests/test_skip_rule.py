"""The CI skip rule (tests/support/skips.py) on a real pytest run of a small suite: under CI a skip without
a machine reason fails, at collection, at setup and in the test; a tagged one stays a skip; outside CI
all skip; every run ends with its skips counted by reason."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITE = {
    "test_cases.py": '''
import pytest

@pytest.fixture
def model():
    pytest.skip("the SmolLM2 GGUF is missing")

def test_missing_package():
    pytest.importorskip("leaf_no_such_module_xyz")

def test_missing_model(model):
    pass

def test_no_docker():
    pytest.skip("[no-docker] no Docker daemon here")

@pytest.mark.skipif(True, reason="[root] needs a non-root user")
def test_as_root():
    pass

@pytest.mark.gpu
def test_on_gpu():
    pass

@pytest.mark.xfail(reason="known")
def test_expected_failure():
    assert False

def test_runs():
    pass
''',
    "test_module_skip.py": 'import pytest\npytest.importorskip("leaf_no_such_module_xyz")\n\ndef test_never():\n    pass\n',
}


def _run(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n  gpu: needs a CUDA GPU\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "LEAF_REQUIRE_LLAMA", "PYTEST_ADDOPTS")}
    env.update({"PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]), "CUDA_VISIBLE_DEVICES": ""})
    if ci:
        env["CI"] = "true"
    # --continue-on-collection-errors: a module that fails to collect stops a real run before any test; here
    # the run goes on so that every case shows its outcome
    argv = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "tests.support.skips",
            "--continue-on-collection-errors", str(tmp_path)]
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def _outcomes(out: str) -> dict[str, str]:
    """test name -> its outcome, from pytest's -v lines (`file::test OUTCOME`); a module that failed to
    collect as `test_module_skip`."""
    found = {name: "ERROR" for name in ("test_module_skip",) if f"ERROR collecting {name}.py" in out}
    for line in out.splitlines():
        match = re.match(r"\S+::test_(\w+) (PASSED|FAILED|SKIPPED|XFAIL|ERROR)", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


@pytest.mark.parametrize("ci", [True, False], ids=["ci", "local"])
def test_a_skip_without_a_machine_reason_fails_under_ci(tmp_path: Path, ci: bool) -> None:
    run = _run(tmp_path, ci)
    outcomes = _outcomes(run.stdout)
    quiet = "FAILED" if ci else "SKIPPED"
    assert outcomes == {"missing_package": quiet, "missing_model": "ERROR" if ci else "SKIPPED",
                        **({"test_module_skip": "ERROR"} if ci else {}), "no_docker": "SKIPPED",
                        "as_root": "SKIPPED", "on_gpu": "SKIPPED", "expected_failure": "XFAIL", "runs": "PASSED"}, run.stdout
    assert (run.returncode != 0) == ci
    if ci:
        assert "skipped under CI without a machine reason: the SmolLM2 GGUF is missing" in run.stdout
    summary = run.stdout.split("skipped, by reason", 1)[1]
    assert "[no-gpu] no CUDA device here" in summary and "[no-docker] no Docker daemon here" in summary
    assert summary.count("\n    1  ") == (3 if ci else 4) and ("\n    2  could not import" in summary) != ci, summary
