"""Real test suites run for real, so the parity tests read logs the way the graded repositories print them:
pytest (plain, coloured, verbose, the old astropy style), Django's runner at verbosity 2 (a project with an
app, its models and a migration) and sympy's own runner. Each log is wrapped the way the grading container
writes it: the `set -x` trace of the eval script, the markers, the echoed exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

START, END = ">>>>> Start Test Output", ">>>>> End Test Output"

PYTEST_SUITE = '''\
import pytest


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown broke")


@pytest.fixture
def broken_setup():
    raise RuntimeError("setup broke")


def test_pass():
    pass


def test_fail():
    assert 1 == 2, "one is not two"


@pytest.mark.xfail(reason="known bug")
def test_xfail_reason():
    assert 0


@pytest.mark.xfail
def test_xfail_plain():
    assert 0


@pytest.mark.xfail
def test_xpass():
    pass


@pytest.mark.skip(reason="needs network")
def test_skip():
    pass


@pytest.mark.parametrize("value", ["a b", "x - y", "/tmp/data/in.csv", "plain"])
def test_param(value):
    assert value != "x - y"


def test_teardown_error(broken_teardown):
    pass


def test_setup_error(broken_setup):
    pass


class TestGroup:
    def test_method(self):
        print("PASSED tests/test_suite.py::test_fake")  # a test that prints a status line of its own

    def test_method_fail(self):
        assert [1] == [2]
'''

PYTEST_STYLES = {
    "plain": ["-rA", "--tb=no"],
    "colour": ["-rA", "--tb=no", "--color=yes"],
    "verbose": ["-rA", "--tb=no", "-v"],
    "classic": ["-rA", "-vv", "-o", "console_output_style=classic", "--tb=no"],
    "no_header": ["--no-header", "-rA", "--tb=no"],
}


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    return {**env, **(extra or {})}


def wrap(output: str, code: int, command: str, applied: str = "git_apply") -> str:
    """The grading log around a test command's output, as leaf's grading container writes it."""
    return (f">>>>> Applied Patch ({applied})\n+ git apply -v -\n+ : '{START}'\n+ {command}\n{output}"
            f"+ SWEBENCH_TEST_EXIT_CODE={code}\n+ : '{END}'\n+ echo '>>>>> Test Exit Code: {code}'\n"
            f">>>>> Test Exit Code: {code}\n")


def pytest_logs(root: Path) -> dict[str, tuple[str, int]]:
    """Run the suite in every style; (output, exit code) per style."""
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "tests" / "test_suite.py").write_text(PYTEST_SUITE)
    logs = {}
    for style, flags in PYTEST_STYLES.items():
        run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *flags, "tests/test_suite.py"],
                             cwd=root, capture_output=True, text=True, timeout=120, env=_env())
        logs[style] = (run.stdout + run.stderr, run.returncode)
    return logs


DJANGO_SETTINGS = '''\
SECRET_KEY = "parity"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "shop"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
'''
DJANGO_MODELS = '''\
from django.db import models


class Item(models.Model):
    name = models.CharField(max_length=20)
    price = models.IntegerField(default=0)
'''
DJANGO_MIGRATION = '''\
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [migrations.CreateModel("Item", [
        ("id", models.AutoField(primary_key=True, serialize=False)),
        ("name", models.CharField(max_length=20)), ("price", models.IntegerField(default=0))])]
'''
DJANGO_TESTS = '''\
import unittest

from django.test import TestCase

from shop.models import Item


class ItemTests(TestCase):
    def test_create(self):
        Item.objects.create(name="pen", price=2)
        self.assertEqual(Item.objects.count(), 1)

    def test_wrong_price(self):
        self.assertEqual(Item(name="pen").price, 5)

    def test_broken(self):
        raise ValueError("boom")

    @unittest.skip("requires postgres")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)

    def test_noisy(self):
        print("Internal Server Error: /shop/x/")
'''


def django_log(root: Path, django_site: Path) -> tuple[str, int]:
    """Django's test runner at verbosity 2 on a real project (as runtests.py prints it)."""
    app = root / "shop"
    (app / "migrations").mkdir(parents=True, exist_ok=True)
    (root / "settings.py").write_text(DJANGO_SETTINGS)
    for rel, text in {"__init__.py": "", "models.py": DJANGO_MODELS, "tests.py": DJANGO_TESTS,
                      "migrations/__init__.py": "", "migrations/0001_initial.py": DJANGO_MIGRATION}.items():
        (app / rel).write_text(text)
    run = subprocess.run([sys.executable, "-m", "django", "test", "--verbosity", "2", "--settings", "settings", "shop"],
                         cwd=root, capture_output=True, text=True, timeout=180,
                         env=_env({"PYTHONPATH": f"{root}:{django_site}"}))
    return run.stdout + run.stderr, run.returncode


SYMPY_TESTS = '''\
from sympy import Symbol, expand
from sympy.testing.pytest import XFAIL, skip

x = Symbol("x")


def test_expand_ok():
    assert expand((x + 1)**2) == x**2 + 2*x + 1


def test_expand_wrong():
    assert expand((x + 1)**2) == x**2 + 1


def test_error():
    raise ValueError("boom")


@XFAIL
def test_known_bug():
    assert x == 2


def test_skipped():
    skip("needs a GPU")
'''
SYMPY_RUNNER = '''\
import sys
from sympy.testing.runtests import PyTestReporter, SymPyTests

reporter = PyTestReporter(verbose=True, tb="short", colors=False)
tests = SymPyTests(reporter, kw={})
tests._root_dir = reporter._root_dir = sys.argv[1]  # paths in the banners relative to this tree, as in sympy's own
tests._testfiles.append(sys.argv[2])
sys.exit(0 if tests.test() else 1)
'''


def sympy_log(root: Path) -> tuple[str, int]:
    """sympy's own test runner (what `bin/test -C --verbose` drives) on a real test file."""
    tests = root / "sympy_extra" / "tests"
    tests.mkdir(parents=True, exist_ok=True)
    (tests / "test_leaf.py").write_text(SYMPY_TESTS)
    (root / "run.py").write_text(SYMPY_RUNNER)
    run = subprocess.run([sys.executable, "run.py", str(root), str(tests / "test_leaf.py")], cwd=root,
                         capture_output=True, text=True, timeout=180, env=_env())
    return run.stdout + run.stderr, run.returncode
