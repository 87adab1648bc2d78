"""SWE-bench grading against the official code: swebench 5.0.2's parsers and grading on logs of real suites
(pytest in five output styles, Django's runner on a project with models and a migration, sympy's runner),
and the eval scripts and spec table against swebench 4.1.0's (the scripts 5's rows carry were made by it).
The official packages are installed from PyPI into a cache (`official/`); without PyPI these tests skip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaf_cli.tasks.importers import import_swebench_rows
from leaf_cli.tasks.importers.swebench_specs import eval_script, own_eval_script, repo_spec
from leaf_cli.tasks.grading.swebench import swebench_verdict
from leaf_cli.tasks.grading.log_parsers import get_parser, parser_key
from leaf_cli.tasks.grading.verdict import GradeResult

from .official import load, site, suites

DATASETS_STUB = {"datasets": {"Dataset": object, "load_dataset": None, "load_from_disk": None}}
PYTEST_PARSERS = ("pytest", "pytest_options", "pytest_v2", "matplotlib", "seaborn")
VERIFIED_REPOS = ("astropy/astropy", "django/django", "matplotlib/matplotlib", "mwaskom/seaborn", "pallets/flask",
                  "psf/requests", "pydata/xarray", "pylint-dev/pylint", "pytest-dev/pytest",
                  "scikit-learn/scikit-learn", "sphinx-doc/sphinx", "sympy/sympy")


@pytest.fixture(scope="module")
def v5():
    parsers, grading, utils = load("swebench-5.0.2", ("swebench", "swebench.harness"), "swebench.harness.log_parsers.python",
                                   "swebench.harness.grading", "swebench.harness.utils", stubs=DATASETS_STUB)
    return parsers, grading, utils


@pytest.fixture(scope="module")
def v4():
    specs, script = load("swebench-4.1.0", ("swebench", "swebench.harness"), "swebench.harness.constants.python",
                         "swebench.harness.test_spec.python", stubs=DATASETS_STUB)
    return specs, script


@pytest.fixture(scope="module")
def real_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str, int]]:
    """name -> (parser, output, exit code), every one produced by running a real suite here."""
    root = tmp_path_factory.mktemp("suites")
    logs = {f"pytest-{style}": ("pytest_v2", out, code) for style, (out, code) in suites.pytest_logs(root / "py").items()}
    logs["django"] = ("django", *suites.django_log(root / "dj", site("django-4.2.17")))
    logs["sympy"] = ("sympy", *suites.sympy_log(root / "sym"))
    return logs


def test_parsers_read_real_logs_as_swebench_5_does(v5, real_logs) -> None:
    official, _, _ = v5
    compared = 0
    for name, (own_parser, output, _) in real_logs.items():
        sizes = []
        for parser in (PYTEST_PARSERS if name.startswith("pytest") else (own_parser,)):
            ours, theirs = get_parser(parser)(output), getattr(official, f"parse_log_{parser}")(output, None)
            assert ours == theirs, (name, parser)
            sizes.append(len(theirs))
            compared += 1
        assert max(sizes) >= 4, f"the official parsers read almost nothing in {name}: not a meaningful comparison"
    assert compared == 5 * 5 + 2
    plain = get_parser("pytest_v2")(real_logs["pytest-plain"][1])
    assert plain["tests/test_suite.py::test_xfail_reason - known bug"] == "XFAIL"  # 5.0.2 keeps the reason
    # PASSED, then the teardown's `ERROR id - message` line, which 5.0.2 keys with its message: the id stays PASSED
    assert plain["tests/test_suite.py::test_teardown_error"] == "PASSED"
    assert plain["tests/test_suite.py::test_teardown_error - RuntimeError: teardown broke"] == "ERROR"
    assert plain["tests/test_suite.py::test_param[x"] == "FAILED"  # a FAILED line is cut at its first " - "


def _cases(output: str, found: dict[str, str]) -> list[tuple[list[str], list[str]]]:
    """FAIL_TO_PASS / PASS_TO_PASS selections over a log's tests, ids it lacks, and ids cut mid-parameter."""
    ids = sorted(found) + ["tests/test_suite.py::test_missing", "tests/test_suite.py::test_param[a",
                           "tests/test_suite.py::test_param[", "test_missing (shop.tests.ItemTests.test_missing)"]
    good = [i for i in sorted(found) if found[i] in ("PASSED", "XFAIL")][:1]
    return [([i], []) for i in ids] + [(good, [i]) for i in ids] + [(good, [])]


def _official_resolved(grading, utils, tmp: Path, row: dict, log: str) -> bool:
    spec = utils.make_test_spec(row)
    path = tmp / "test_output.txt"
    path.write_text(log)
    report = grading.get_eval_report(spec, {"instance_id": row["instance_id"], "model_patch": "x"}, str(path), False)
    return bool(report[row["instance_id"]]["resolved"])


def _row(parser: str, f2p: list[str], p2p: list[str], eval_type: str) -> dict:
    return {"instance_id": "pytest-dev__pytest-1", "repo": "pytest-dev/pytest", "version": "5.4",
            "base_commit": "a" * 40, "problem_statement": "x", "patch": "", "test_patch": "",
            "image": "swebench/sweb.eval.x86_64.pytest-dev_1776_pytest-1:latest", "log_parser": f"parse_log_{parser}",
            "eval_type": eval_type, "FAIL_TO_PASS": json.dumps(f2p), "PASS_TO_PASS": json.dumps(p2p),
            "eval_script": f"cd /testbed\n: '{suites.START}'\npytest -rA\n: '{suites.END}'\n"}


def test_resolved_decisions_agree_with_swebench_5(v5, real_logs, tmp_path: Path) -> None:
    _, grading, utils = v5
    agree, disagree = 0, []
    for name, (parser, output, code) in real_logs.items():
        found = get_parser(parser)(output)
        failing = {"FAILED", "ERROR"}
        no_failures = "\n".join(l for l in output.split("\n") if not l.startswith(tuple(failing)) and " ... FAIL" not in l
                                and " ... ERROR" not in l and not l.startswith(("FAIL:", "ERROR:")))
        logs = {"real": suites.wrap(output, code, "run"), "fake-pass": suites.wrap(no_failures, 1, "run"),
                "clean-exit": suites.wrap(output, 0, "run"), "no-markers": output,
                "timed-out": suites.wrap(output, code, "run") + ">>>>> Tests Timed Out\n"}
        for f2p, p2p in _cases(output, found):
            for eval_type in ("pass_and_fail", "fail_only"):
                row = _row(parser, f2p, p2p, eval_type)
                [task] = import_swebench_rows([row])
                for kind, log in logs.items():
                    theirs = _official_resolved(grading, utils, tmp_path, row, log)
                    ours = swebench_verdict(task, GradeResult(instance_id=task.instance_id, resolved=False,
                                                              patch_applied="empty"), log).resolved
                    if ours == theirs:
                        agree += 1
                    else:
                        disagree.append((name, kind, eval_type, f2p, p2p, ours, theirs))
    assert disagree == []
    print(f"decisions agreeing with swebench 5.0.2: {agree}")
    assert agree > 1500, agree  # every selection, both eval types, five log shapes, seven real logs


def test_eval_scripts_match_the_official_ones(v4, v5) -> None:
    specs, script = v4
    _, _, utils = v5
    test_patch = ("diff --git a/tests/shop/models.py b/tests/shop/models.py\n--- a/tests/shop/models.py\n"
                  "+++ b/tests/shop/models.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n"
                  "diff --git a/tests/shop/migrations/0002_x.py b/tests/shop/migrations/0002_x.py\nnew file mode 100644\n"
                  "--- /dev/null\n+++ b/tests/shop/migrations/0002_x.py\n@@ -0,0 +1 @@\n+ops = []\n"
                  "diff --git a/tests/shop/tests.py b/tests/shop/tests.py\n--- a/tests/shop/tests.py\n"
                  "+++ b/tests/shop/tests.py\n@@ -1 +1,2 @@\n a = 1\n+b = 2\n"
                  "diff --git a/docs/notes.txt b/docs/notes.txt\n--- a/docs/notes.txt\n+++ b/docs/notes.txt\n"
                  "@@ -1 +1 @@\n-old\n+new\n")
    compared = 0
    for repo in VERIFIED_REPOS:
        for version, spec in specs.MAP_REPO_VERSION_TO_SPECS_PY[repo].items():
            instance = {"repo": repo, "version": version, "test_patch": test_patch, "instance_id": "x__y-1"}
            official = script.make_eval_script_list_py(instance, spec, "testbed", "/testbed", "b" * 40, test_patch)
            official_text = "\n".join(["#!/bin/bash", "set -uxo pipefail", *official]) + "\n"  # what the rows carry
            run_by_v5 = "\n".join(["#!/bin/bash", "set -uxo pipefail",
                                   *utils.record_test_exit_code(utils.parse_eval_script(official_text))]) + "\n"
            assert eval_script(repo, "b" * 40, test_patch, repo_spec(repo, version)) == run_by_v5, (repo, version)
            assert own_eval_script(official_text) == run_by_v5  # a row's own script runs as 5.0.2 runs it
            compared += 1
    assert compared == 193
    django = eval_script("django/django", "b" * 40, test_patch, repo_spec("django/django", "3.0"))
    assert " shop.models shop.migrations.0002_x shop.tests\n" in django  # labels keep models.py and migrations
    assert "git checkout " + "b" * 40 + " tests/shop/models.py tests/shop/tests.py docs/notes.txt\n" in django
    assert "rm " not in django  # the file the test patch creates stays in place


def test_spec_table_and_parsers_match_the_official_table(v4) -> None:
    specs, _ = v4
    _, _ = specs, None
    (parsers,) = load("swebench-4.1.0", ("swebench", "swebench.harness"), "swebench.harness.log_parsers.python",
                      stubs=DATASETS_STUB)
    pairs = 0
    for repo in VERIFIED_REPOS:
        official_parser = parser_key(parsers.MAP_REPO_TO_PARSER_PY[repo].__name__)
        for version, spec in specs.MAP_REPO_VERSION_TO_SPECS_PY[repo].items():
            ours = repo_spec(repo, version)
            assert (ours.test_cmd, ours.eval_commands, ours.install) == (
                spec["test_cmd"], spec.get("eval_commands", []), spec.get("install")), (repo, version)
            assert parser_key(ours.log_parser) == official_parser, repo
            pairs += 1
    assert pairs == 193
