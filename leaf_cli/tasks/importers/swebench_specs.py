"""How the official SWE-bench harness tests each repository of SWE-bench Verified and Lite.

Transcribed from `swebench/harness/constants/python.py` (MAP_REPO_VERSION_TO_SPECS_PY: `test_cmd`,
`eval_commands`) and `swebench/harness/log_parsers/python.py` (MAP_REPO_TO_PARSER_PY), and the eval
script of `swebench/harness/test_spec/python.py` (reset the test files, apply `test_patch`, run the test
command on the files it touches, reset again). Only the 12 repositories of Verified/Lite are listed; an
unknown repository imports with no test command and grading says so instead of guessing.
"""

from __future__ import annotations

import posixpath
import re

from pydantic import BaseModel

# The harness module assigns TEST_PYTEST twice; the later value, "pytest -rA", is the one in force.
PYTEST = "pytest -rA"
ASTROPY_OLD = "pytest -rA -vv -o console_output_style=classic --tb=no"
DJANGO = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
DJANGO_NO_PARALLEL = "./tests/runtests.py --verbosity 2"
SEABORN = "pytest --no-header -rA"
SPHINX = "tox --current-env -epy39 -v --"
SYMPY = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose"

LOCALE_EXPORTS = ["export LANG=en_US.UTF-8", "export LC_ALL=en_US.UTF-8", "export PYTHONIOENCODING=utf8",
                  "export LANGUAGE=en_US:en"]
LOCALE_GEN = ["sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen", "export LANG=en_US.UTF-8",
              "export LANGUAGE=en_US:en", "export LC_ALL=en_US.UTF-8"]

START_MARKER = ">>>>> Start Test Output"
END_MARKER = ">>>>> End Test Output"
EXIT_MARKER = ">>>>> Test Exit Code:"
"""leaf adds the exit-code line after the end marker (SWE-bench v5's hardening): a log with no failures
but a non-zero exit is not a pass."""

NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")


class RepoSpec(BaseModel):
    """How one repository's tests run and how their log is read."""

    test_cmd: str
    log_parser: str
    eval_commands: list[str] = []


def _spec(repo: str, version: str) -> RepoSpec | None:
    if repo == "django/django":
        cmd = DJANGO_NO_PARALLEL if version == "1.9" else DJANGO
        env = LOCALE_EXPORTS if version in {"1.7", "1.8", "1.9", "1.10", "1.11", "2.0", "2.1", "2.2"} else (
            LOCALE_GEN if version in {"3.0", "3.1", "3.2"} else [])
        return RepoSpec(test_cmd=cmd, log_parser="django", eval_commands=env)
    if repo == "astropy/astropy":
        old = version in {"0.1", "0.2", "0.3", "0.4", "1.1", "1.2", "1.3"}
        return RepoSpec(test_cmd=ASTROPY_OLD if old else PYTEST, log_parser="pytest_v2")
    simple = {
        "sympy/sympy": (SYMPY, "sympy"),
        "sphinx-doc/sphinx": (SPHINX, "pytest_v2"),
        "scikit-learn/scikit-learn": (PYTEST, "pytest_v2"),
        "mwaskom/seaborn": (SEABORN, "seaborn"),
        "matplotlib/matplotlib": (PYTEST, "matplotlib"),
        "pallets/flask": (PYTEST, "pytest"),
        "pydata/xarray": (PYTEST, "pytest"),
        "pytest-dev/pytest": (PYTEST, "pytest"),
        "psf/requests": (PYTEST, "pytest_options"),
        "pylint-dev/pylint": (PYTEST, "pytest_options"),
    }
    if repo in simple:
        cmd, parser = simple[repo]
        return RepoSpec(test_cmd=cmd, log_parser=parser)
    return None


def repo_spec(repo: str, version: str) -> RepoSpec | None:
    """The official test command and log parser for `repo` at `version`, or None when not tabled here."""
    return _spec(repo, version)


def directives(repo: str, test_patch: str) -> list[str]:
    """The test files `test_patch` touches, as the test command takes them (django: dotted modules)."""
    files = re.findall(r"diff --git a/.* b/(.*)", test_patch)
    files = [f for f in files if not f.endswith(NON_TEST_EXTS)]
    if repo != "django/django":
        return files
    modules = []
    for path in files:
        name = posixpath.basename(path)
        if not (name == "tests.py" or name.startswith("test_") or "/tests/" in path or "/test_" in path):
            continue
        path = path[: -len(".py")] if path.endswith(".py") else path
        path = path[len("tests/"):] if path.startswith("tests/") else path
        modules.append(path.replace("/", "."))
    return modules


def _patch_files(test_patch: str) -> tuple[list[str], list[str]]:
    """(files the patch modifies, files it creates): the first are reset with git, the second removed."""
    modified, created = [], []
    for block in re.split(r"^diff --git ", test_patch, flags=re.MULTILINE)[1:]:
        target = re.search(r"^\+\+\+ b/(.+)$", block, re.MULTILINE)
        source = re.search(r"^--- (.+)$", block, re.MULTILINE)
        if target is None:
            continue
        (created if source is not None and source.group(1).strip() == "/dev/null" else modified).append(
            target.group(1).strip())
    return modified, created


def eval_script(repo: str, base_commit: str, test_patch: str, spec: RepoSpec, workdir: str = "/testbed") -> str:
    """The grading script for an official SWE-bench image: tests reset, test_patch applied, tests run between
    the start and end markers, the exit code recorded, tests reset again."""
    modified, created = _patch_files(test_patch)
    reset = []
    if modified:
        reset.append(f"git checkout {base_commit} {' '.join(modified)}")
    if created:
        reset.append(f"rm -f {' '.join(created)}")
    test_cmd = " ".join([spec.test_cmd, *directives(repo, test_patch)])
    lines = [
        "#!/bin/bash", "set -uxo pipefail", "source /opt/miniconda3/bin/activate", "conda activate testbed",
        f"cd {workdir}", *spec.eval_commands, f"git config --global --add safe.directory {workdir}", *reset,
        f"git apply -v - <<'LEAF_TEST_PATCH_EOF'\n{test_patch}\nLEAF_TEST_PATCH_EOF",
        f": '{START_MARKER}'", test_cmd, "leaf_status=$?", f": '{END_MARKER}'",
        f"echo '{EXIT_MARKER}' $leaf_status", *reset,
    ]
    return "\n".join(lines) + "\n"
