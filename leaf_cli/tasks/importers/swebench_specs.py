"""How the official SWE-bench harness tests each repository of SWE-bench Verified and Lite.

Written from swebench 4.1.0's `swebench/harness/constants/python.py` (MAP_REPO_VERSION_TO_SPECS_PY: `test_cmd`,
`eval_commands`, `install`) and `log_parsers/python.py` (MAP_REPO_TO_PARSER_PY), and the eval script its
`test_spec/python.py` builds (the script swebench 5's re-released rows carry as `eval_script`): the
environment activated, the spec's install step re-run (so a patch to compiled code, sklearn's or
astropy's, is built before it is tested), the files the test patch modifies reset, `test_patch` applied,
the test command run on the files it touches between the markers, the exit code recorded (5.0.2's
`record_test_exit_code`), the files reset again. `tests/tasks/test_swebench_parity.py` compares the scripts
with the official functions' output line for line. Only the 12 repositories of Verified/Lite are listed; an
unknown repository imports with no test command and grading says so instead of guessing.
"""

from __future__ import annotations

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
EXIT_MARKER = ">>>>> Test Exit Code"
"""The exit-code line after the end marker (SWE-bench v5's hardening): a log with no failures but a
non-zero exit is not a pass."""
EXIT_VARIABLE = "SWEBENCH_TEST_EXIT_CODE"
HEREDOC = "EOF_114329324912"
"""The delimiter the official scripts wrap `test_patch` in (kept, so the scripts compare byte for byte)."""

NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")


class RepoSpec(BaseModel):
    """How one repository's tests run and how their log is read."""

    test_cmd: str
    log_parser: str
    eval_commands: list[str] = []
    install: str | None = None
    """Re-run by the eval script before the tests, as the official harness does."""


PIP_E = "python -m pip install -e ."
INSTALL = {
    "astropy/astropy": "python -m pip install -e .[test] --verbose",
    "sympy/sympy": PIP_E, "pallets/flask": PIP_E, "pydata/xarray": PIP_E, "pytest-dev/pytest": PIP_E,
    "pylint-dev/pylint": PIP_E,
    "sphinx-doc/sphinx": "python -m pip install -e .[test]",
    "scikit-learn/scikit-learn": "python -m pip install -v --no-use-pep517 --no-build-isolation -e .",
    "psf/requests": "python -m pip install .",
}


def _install(repo: str, version: str) -> str | None:
    """The spec's install step; three repositories change it with the version."""
    if repo == "django/django":
        return "python setup.py install" if _older(version, "3.0") else PIP_E
    if repo == "matplotlib/matplotlib":
        if _older(version, "3.0"):
            return "python setup.py build; python setup.py install"
        return 'python -m pip install --no-build-isolation -e ".[dev]"' if not _older(version, "3.8") else PIP_E
    if repo == "mwaskom/seaborn":
        return PIP_E if version == "0.11" else "python -m pip install -e .[dev]"
    return INSTALL.get(repo)


def _older(version: str, than: str) -> bool:
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.split(".") if p.isdigit())
    return key(version) < key(than)


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
    """The official test command, log parser and install step for `repo` at `version`, or None when not
    tabled here."""
    spec = _spec(repo, version)
    return spec.model_copy(update={"install": _install(repo, version)}) if spec else None


def directives(repo: str, test_patch: str) -> list[str]:
    """The test files `test_patch` touches, as the test command takes them (django: dotted modules)."""
    files = re.findall(r"diff --git a/.* b/(.*)", test_patch)
    files = [f for f in files if not f.endswith(NON_TEST_EXTS)]
    if repo != "django/django":
        return files
    modules = []  # every file the patch touches, models.py and migrations too: the official runner gets them all
    for path in files:
        path = path[: -len(".py")] if path.endswith(".py") else path
        path = path[len("tests/"):] if path.startswith("tests/") else path
        modules.append(path.replace("/", "."))
    return modules


def modified_files(test_patch: str) -> list[str]:
    """The files `test_patch` changes that exist before it (what the script resets with `git checkout`).
    Files it creates are left alone, as the official script leaves them."""
    files = []
    for block in re.split(r"^diff --git ", test_patch, flags=re.MULTILINE)[1:]:
        source = re.search(r"^--- (\S+)", block, re.MULTILINE)
        if source is not None and source.group(1).startswith("a/"):
            files.append(source.group(1)[2:])
    return files


def eval_script(repo: str, base_commit: str, test_patch: str, spec: RepoSpec, workdir: str = "/testbed") -> str:
    """The grading script for an official SWE-bench image, line for line as the official harness writes it."""
    reset = f"git checkout {base_commit} {' '.join(modified_files(test_patch))}"
    test_cmd = " ".join([spec.test_cmd, *directives(repo, test_patch)])
    activate = ["source /opt/miniconda3/bin/activate", "conda activate testbed"]
    lines = [
        *activate, f"cd {workdir}", *spec.eval_commands, f"git config --global --add safe.directory {workdir}",
        f"cd {workdir}", "git status", "git show", f"git -c core.fileMode=false diff {base_commit}", *activate,
        *([spec.install] if spec.install else []), reset,
        f"git apply -v - <<'{HEREDOC}'\n{test_patch}\n{HEREDOC}", f": '{START_MARKER}'", test_cmd, f": '{END_MARKER}'",
        reset,
    ]
    return "\n".join(["#!/bin/bash", "set -uxo pipefail", *record_exit_code(lines)]) + "\n"


def own_eval_script(text: str) -> str:
    """A row's own `eval_script` as the official harness runs it: its shebang and `set` line put back in
    front, and the exit code recorded around the end marker."""
    lines = [line for line in text.strip().split("\n") if line not in ("#!/bin/bash", "set -uxo pipefail")]
    return "\n".join(["#!/bin/bash", "set -uxo pipefail", *record_exit_code(lines)]) + "\n"


def record_exit_code(lines: list[str]) -> list[str]:
    """Capture the test command's status just before the end-marker line and echo it just after (swebench
    5's hardening; rows that carry their own script get it the same way). A script without the marker is
    left as it is: its log is then judged on the statuses alone."""
    for index, line in enumerate(lines):
        if END_MARKER in line:
            return [*lines[:index], f"{EXIT_VARIABLE}=$?", line, f'echo "{EXIT_MARKER}: ${EXIT_VARIABLE}"',
                    *lines[index + 1:]]
    return list(lines)
