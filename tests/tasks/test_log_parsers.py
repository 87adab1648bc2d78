"""The official harnesses' log parsers on logs written in the public formats (pytest -rA, django's runtests at
verbosity 2, sympy's bin/test --verbose, seaborn, matplotlib) and SWE-bench Pro's parser.py / output.json."""

from __future__ import annotations

import json

import pytest

from leaf_cli.tasks.grading.log_parsers import (END_MARKER, START_MARKER, exit_code, get_parser, lookup, parse_django,
                                        parse_matplotlib, parse_pro_output, parse_pytest, parse_pytest_options,
                                        parse_pytest_v2, parse_seaborn, parse_sympy, run_pro_parser)
from leaf_cli.tasks.grading.log_parsers import test_section as section_of

PYTEST_LOG = """\
============================= test session starts ==============================
collected 6 items

tests/test_core.py ..F.sx                                                [100%]

=========================== short test summary info ============================
PASSED tests/test_core.py::test_add
PASSED tests/test_core.py::test_sub[1-2]
PASSED tests/test_core.py::test_name[a b]
FAILED tests/test_core.py::test_mul - AssertionError: assert 6 == 5
FAILED tests/test_core.py::test_range[x - y] - ValueError: bad
ERROR tests/test_core.py::test_db - fixture 'db' not found
SKIPPED [1] tests/test_core.py:40: needs network
XFAIL tests/test_core.py::test_future - not implemented
==================== 1 failed, 3 passed, 1 skipped, 1 xfailed in 0.12s =========
"""


def test_pytest_summary_lines() -> None:
    found = parse_pytest(PYTEST_LOG)
    assert found == {
        "tests/test_core.py::test_add": "PASSED", "tests/test_core.py::test_sub[1-2]": "PASSED",
        "tests/test_core.py::test_name[a": "PASSED", "tests/test_core.py::test_mul": "FAILED",
        "tests/test_core.py::test_range[x": "FAILED", "tests/test_core.py::test_db": "ERROR",
        "tests/test_core.py::test_future": "XFAIL",
    }  # "SKIPPED [1] file:line" counts skips; an id with a space keeps its first word, as swebench 5.0.2's
    # `parse_log_pytest` keys it (the datasets' ids were made that way; `lookup` prefix-matches the cut ones)


def test_pytest_verbose_lines_and_options() -> None:
    verbose = "tests/test_io.py::test_read PASSED                 [ 50%]\ntests/test_io.py::test_write FAILED [100%]\n"
    assert parse_pytest(verbose) == {}  # the plain parser reads summary lines only (-rA prints them)
    assert parse_pytest_v2(verbose) == {}  # a trailing "[ 50%]" hides the status from the ends-with rule too
    assert parse_pytest_v2("tests/test_io.py::test_read PASSED\ntests/test_io.py::test_write FAILED\n") == {
        "tests/test_io.py::test_read": "PASSED", "tests/test_io.py::test_write": "FAILED"}
    # requests/pylint: a parameter that is a file path is keyed by its last component
    log = "PASSED tests/test_lint.py::test_file[/tmp/pytest-1/data/input.py]\nPASSED tests/test_lint.py::test_url[//host/x]\n"
    assert parse_pytest_options(log) == {"tests/test_lint.py::test_file[/input.py]": "PASSED",
                                         "tests/test_lint.py::test_url[//host/x]": "PASSED"}


def test_pytest_v2_strips_colour_codes() -> None:
    log = "\x1b[32mPASSED\x1b[0m astropy/io/tests/test_a.py::test_ok\n\x1b[31mFAILED\x1b[0m astropy/io/tests/test_a.py::test_bad - E\n"
    assert parse_pytest_v2(log) == {"astropy/io/tests/test_a.py::test_ok": "PASSED",
                                    "astropy/io/tests/test_a.py::test_bad": "FAILED"}


DJANGO_LOG = """\
Testing against Django installed in '/testbed/django' with up to 1 processes
Creating test database for alias 'default'...
test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests) ... ok
test_unicode_validator (auth_tests.test_validators.UsernameValidatorsTests) ... FAIL
test_help_text (auth_tests.test_validators.UserAttributeSimilarityValidatorTest) ... ERROR
test_skipped (auth_tests.test_validators.NumericPasswordValidatorTest) ... skipped 'requires sqlite'
test_noisy (admin_views.tests.AdminViewBasicTest) ... Internal Server Error: /admin/x/
ok
test_docstring (admin_scripts.tests.CommandTypes)
--version is equivalent to version ... ok

======================================================================
FAIL: test_unicode_validator (auth_tests.test_validators.UsernameValidatorsTests)
----------------------------------------------------------------------
Ran 6 tests in 0.021s

FAILED (failures=1, errors=1, skipped=1)
"""


def test_django_runtests_format() -> None:
    found = parse_django(DJANGO_LOG)
    assert found["test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)"] == "PASSED"
    assert found["test_unicode_validator (auth_tests.test_validators.UsernameValidatorsTests)"] == "FAILED"
    assert found["test_help_text (auth_tests.test_validators.UserAttributeSimilarityValidatorTest)"] == "ERROR"
    assert found["test_skipped (auth_tests.test_validators.NumericPasswordValidatorTest)"] == "SKIPPED"
    assert found["test_noisy (admin_views.tests.AdminViewBasicTest)"] == "PASSED"  # "ok" on the next line
    assert found["--version is equivalent to version"] == "PASSED"
    assert found["test_unicode_validator"] == "FAILED"  # the FAIL: header's first word


SYMPY_LOG = """\
============================= test process starts ==============================
executable:         /opt/miniconda3/envs/testbed/bin/python  (3.9.19-final-0) [CPython]

sympy/core/tests/test_basic.py[3]
test__aresame ok
test_immutable F
test_broken E
                                                                            [FAIL]

________________________________________________________________________________
____________ sympy/core/tests/test_basic.py:test_immutable ____________
AssertionError
"""


def test_sympy_bin_test_format() -> None:
    found = parse_sympy(SYMPY_LOG)
    assert found["test__aresame"] == "PASSED" and found["test_immutable"] == "FAILED"
    assert found["test_broken"] == "ERROR" and found["sympy/core/tests/test_basic.py:test_immutable"] == "FAILED"


def test_seaborn_and_matplotlib() -> None:
    seaborn = "PASSED tests/test_core.py::TestA::test_x\nFAILED tests/test_core.py::TestA::test_y - assert 0\n" \
              "tests/test_core.py::TestA::test_z PASSED\n"
    assert parse_seaborn(seaborn) == {"tests/test_core.py::TestA::test_x": "PASSED",
                                      "tests/test_core.py::TestA::test_y": "FAILED",
                                      }  # `id PASSED` counts only with words after it
    assert parse_seaborn("tests/test_core.py::TestA::test_z PASSED [ 9%]\n") == {"tests/test_core.py::TestA::test_z": "PASSED"}
    mpl = "PASSED lib/matplotlib/tests/test_widgets.py::test_click[MouseButton.LEFT]\n"
    assert parse_matplotlib(mpl) == {"lib/matplotlib/tests/test_widgets.py::test_click[1]": "PASSED"}


def test_parser_names_as_the_importer_records_them() -> None:
    assert get_parser("swebench:django") is parse_django and get_parser("pytest") is parse_pytest
    assert get_parser("parse_log_scikit") is parse_pytest_v2 and get_parser("parse_log_requests") is parse_pytest_options
    with pytest.raises(KeyError, match="unknown log parser"):
        get_parser("swebench:cobol")


def test_markers_exit_code_and_lookup() -> None:
    log = (f"+ git apply -v -\n+ : '{START_MARKER}'\nPASSED a.py::t\n+ : '{END_MARKER}'\n"
           "+ echo '>>>>> Test Exit Code:' 1\n>>>>> Test Exit Code: 1\n")
    assert section_of(log).strip().splitlines()[1] == "PASSED a.py::t"
    assert exit_code(log) == 1 and exit_code("no marker") is None
    assert section_of("PASSED a.py::t") is None
    found = {"t.py::test_a[x y]": "PASSED", "t.py::test_b[1]": "PASSED", "t.py::test_b[2]": "FAILED"}
    assert lookup(found, "t.py::test_a[x") == "t.py::test_a[x y]"  # a dataset id cut inside its parameters
    assert lookup(found, "t.py::test_b[") is None  # the keys it prefixes disagree: no answer
    assert lookup(found, "t.py::test_a") is None and lookup(found, "t.py::missing") is None  # no bracket, no guess


PRO_PARSER = '''\
"""A SWE-bench Pro style parser.py: pytest -v output in, output.json out."""
import json, re, sys
from dataclasses import dataclass, asdict
from enum import Enum

class TestStatus(Enum):
    PASSED = 1
    FAILED = 2
    SKIPPED = 3
    ERROR = 4

def parse_log(stdout, stderr):
    tests = []
    for line in (stdout + "\\n" + stderr).splitlines():
        m = re.match(r"^(\\S+::\\S+) (PASSED|FAILED|SKIPPED|ERROR)", line)
        if m:
            tests.append({"name": m.group(1), "status": m.group(2)})
    return tests

if __name__ == "__main__":
    out, err, dest = sys.argv[1:4]
    tests = parse_log(open(out).read(), open(err).read())
    json.dump({"tests": tests}, open(dest, "w"))
'''


def test_swebench_pro_parser_runs_on_the_logs() -> None:
    stdout = "test/a_test.py::test_one PASSED [50%]\ntest/a_test.py::test_two FAILED [100%]\n"
    found = run_pro_parser(PRO_PARSER, stdout, "test/a_test.py::test_three SKIPPED\n")
    assert found == {"test/a_test.py::test_one": "PASSED", "test/a_test.py::test_two": "FAILED",
                     "test/a_test.py::test_three": "SKIPPED"}
    with pytest.raises(ValueError, match="parser.py exit 1"):
        run_pro_parser("import sys\nsys.exit('broken parser')\n", "", "")
    assert parse_pro_output(json.dumps({"tests": [{"name": "TestCore", "status": "passed"}]})) == {"TestCore": "PASSED"}
    with pytest.raises(ValueError, match="no `tests` list"):
        parse_pro_output("{}")
