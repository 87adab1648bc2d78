"""Test-log parsers of the official benchmark harnesses: the only place leaf reads test results from text.

SWE-bench grades a run by parsing the log of the repository's own test command (`MAP_REPO_TO_PARSER_PY` in
`swebench/harness/log_parsers/python.py`); the importer records which parser a task needs as
`install_config.log_parser = "swebench:<name>"`. The formats, written here from the outputs they read:

- `pytest` (`pytest -rA`): short-summary lines `PASSED tests/x.py::test_a`, `FAILED tests/x.py::test_b - msg`,
  also `tests/x.py::test_a PASSED` (verbose); `SKIPPED [3] file:line: reason` is a count, not a test.
- `pytest_options`: the same, with a parameter that is a file path shortened to its last component.
- `pytest_v2`: the same, after stripping colour escapes and control characters.
- `django` (`runtests.py --verbosity 2`): `test_x (app.tests.T) ... ok|skipped ...|FAIL|ERROR`, the
  `FAIL: name` / `ERROR: name` headers, and an `ok` alone on a line after output that split the line.
- `sympy` (`bin/test -C --verbose`): `test_x ok|F|E` and failure banners `____ path.py:test_x ____`.
- `seaborn`, `matplotlib`: pytest summaries with their repositories' quirks.

SWE-bench Pro ships a `parser.py` per instance that turns the run's stdout/stderr into
`{"tests": [{"name", "status"}]}`; `run_pro_parser` runs it and `parse_pro_output` reads that JSON.
Leaf's own local tasks never come here: they are read from leaf's pytest plugin (`testrun.py`).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Callable

from leaf_cli.tasks.proc import run_process

PASSED, FAILED, SKIPPED, ERROR, XFAIL = "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"
STATUSES = (PASSED, FAILED, SKIPPED, ERROR, XFAIL)
GOOD = {PASSED, XFAIL}
"""SWE-bench: a test passed when its status is PASSED or XFAIL."""

START_MARKER = ">>>>> Start Test Output"
END_MARKER = ">>>>> End Test Output"
EXIT_LINE = re.compile(r"^>>>>> Test Exit Code: (-?\d+)\s*$", re.MULTILINE)

StatusMap = dict[str, str]
_STATUS_FIRST = re.compile(rf"^({'|'.join(STATUSES)})\s+(.+?)\s*$")
_TEST_FIRST = re.compile(rf"^(\S+)\s+({'|'.join(STATUSES)})(?:\s|$)")
_COLOUR = re.compile(r"\x1b?\[\d+(?:;\d+)*m")
_CONTROL = str.maketrans("", "", "".join(chr(c) for c in range(1, 32) if c != 9))


def _pytest_line(line: str) -> tuple[str, str] | None:
    """(test id, status) from one pytest result line, or None. A line's ` - message` (FAILED, ERROR, XFAIL) is cut;
    an id may hold spaces (a parametrized value), so the id runs to the message, not to the first space."""
    match = _STATUS_FIRST.match(line)
    if match:
        status, rest = match.groups()
        if status == SKIPPED and rest.startswith("["):  # "SKIPPED [2] tests/x.py:10: reason" counts skips
            return None
        return _cut_message(rest), status
    match = _TEST_FIRST.match(line)
    if match and "::" in match.group(1):
        return match.group(1), match.group(2)
    return None


def _cut_message(rest: str) -> str:
    """`tests/x.py::t[a - b] - AssertionError` -> `tests/x.py::t[a - b]`: a ` - ` inside brackets is kept."""
    depth = 0
    for index, char in enumerate(rest):
        depth += (char == "[") - (char == "]")
        if depth == 0 and rest.startswith(" - ", index):
            return rest[:index]
    return rest


def parse_pytest(log: str) -> StatusMap:
    """`pytest -rA` logs."""
    found: StatusMap = {}
    for line in log.splitlines():
        parsed = _pytest_line(line)
        if parsed:
            found[parsed[0]] = parsed[1]
    return found


def parse_pytest_options(log: str) -> StatusMap:
    """pytest logs whose parameters may be file paths: `t[/tmp/abc/data.csv]` is keyed `t[/data.csv]`."""
    return {_short_option(name): status for name, status in parse_pytest(log).items()}


def _short_option(name: str) -> str:
    match = re.match(r"(.*?)\[(.*)\]$", name)
    if not match:
        return name
    main, option = match.groups()
    if option.startswith("/") and not option.startswith("//") and "*" not in option:
        option = "/" + option.split("/")[-1]
    return f"{main}[{option}]"


def parse_pytest_v2(log: str) -> StatusMap:
    """pytest logs with colour codes or control characters (astropy, scikit-learn, sphinx)."""
    return parse_pytest("\n".join(_COLOUR.sub("", line).translate(_CONTROL) for line in log.splitlines()))


def parse_matplotlib(log: str) -> StatusMap:
    """pytest summaries where matplotlib's parametrized ids print enum members (`MouseButton.LEFT` is 1)."""
    text = log.replace("MouseButton.LEFT", "1").replace("MouseButton.RIGHT", "3")
    return parse_pytest(text)


def parse_seaborn(log: str) -> StatusMap:
    """seaborn's summaries: `FAILED id`, `PASSED id` and verbose `id PASSED` lines (others ignored)."""
    found: StatusMap = {}
    for line in log.splitlines():
        parts = line.split()
        if line.startswith(FAILED) and len(parts) > 1:
            found[_cut_message(line[len(FAILED):].strip())] = FAILED
        elif line.startswith(PASSED) and len(parts) > 1:
            found[line[len(PASSED):].strip()] = PASSED
        elif len(parts) > 1 and parts[1] == PASSED:
            found[parts[0]] = PASSED
    return found


_DJANGO_SPLIT_OK = [  # output printed between "name ..." and its "ok" on the next line
    r"^(.*?)\s\.\.\.\sTesting against Django installed in (?s:.*?) silenced\)\.\nok$",
    r"^(.*?)\s\.\.\.\sInternal Server Error: /(.*)/\nok$",
    r"^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$",
]


def parse_django(log: str) -> StatusMap:
    """Django's runner at verbosity 2: `name ... ok`, `... skipped 'why'`, `... FAIL`, `... ERROR`, and the
    `FAIL: name` / `ERROR: name` headers of the failure report."""
    found: StatusMap = {}
    last = None
    for raw in log.splitlines():
        line = raw.strip()
        if "--version is equivalent to version" in line:  # a docstring test whose output spans lines
            found["--version is equivalent to version"] = PASSED
        if " ... " in line:
            last = line.split(" ... ")[0]
        for suffix in (" ... ok", " ... OK", " ...  OK"):
            if line.endswith(suffix):
                if line.startswith("Applying sites.0002_alter_domain_unique...test_no_migrations"):
                    line = line.split("...", 1)[-1].strip()  # migration output glued to the test name
                found[line[: -len(suffix)]] = PASSED
                break
        if " ... skipped" in line:
            found[line.split(" ... skipped")[0]] = SKIPPED
        if line.endswith(" ... FAIL"):
            found[line[: -len(" ... FAIL")]] = FAILED
        if line.endswith(" ... ERROR"):
            found[line[: -len(" ... ERROR")]] = ERROR
        for status, header in ((FAILED, "FAIL:"), (ERROR, "ERROR:")):
            if line.startswith(header) and len(line.split()) > 1:
                found[line.split()[1]] = status
        if line.startswith("ok") and last is not None:  # "ok" after output that broke the result line
            found[last] = PASSED
    for pattern in _DJANGO_SPLIT_OK:
        for match in re.finditer(pattern, log, re.MULTILINE):
            found[match.group(1)] = PASSED
    return found


def parse_sympy(log: str) -> StatusMap:
    """sympy's `bin/test --verbose`: `test_x ok|F|E` lines and `____ path.py:test_x ____` failure banners."""
    found: StatusMap = {}
    for path, name in re.findall(r"_+ (\S+)\.py:(\S+) _+", log):
        found[f"{path}.py:{name}"] = FAILED
    for raw in log.splitlines():
        line = raw.strip()
        if not line.startswith("test_"):
            continue
        name = line.split()[0]
        if line.endswith(" E"):
            found[name] = ERROR
        elif line.endswith(" F"):
            found[name] = FAILED
        elif line.endswith(" ok"):
            found[name] = PASSED
    return found


SWEBENCH_PARSERS: dict[str, Callable[[str], StatusMap]] = {
    "pytest": parse_pytest, "pytest_options": parse_pytest_options, "pytest_v2": parse_pytest_v2,
    "django": parse_django, "sympy": parse_sympy, "seaborn": parse_seaborn, "matplotlib": parse_matplotlib,
}


def get_parser(name: str) -> Callable[[str], StatusMap]:
    """The parser a task records (`swebench:django` or `django`); an unknown name lists the valid ones."""
    key = name.split(":", 1)[1] if name.startswith("swebench:") else name
    if key not in SWEBENCH_PARSERS:
        raise KeyError(f"unknown log parser {name!r}; known: {', '.join(sorted(SWEBENCH_PARSERS))}")
    return SWEBENCH_PARSERS[key]


def test_section(log: str) -> str | None:
    """The text between the start and end markers (the test command's output); None when either is missing."""
    if START_MARKER not in log or END_MARKER not in log:
        return None
    return log.split(START_MARKER, 1)[1].split(END_MARKER, 1)[0]


def exit_code(log: str) -> int | None:
    """The test command's exit code the grading script echoed after the end marker, if any."""
    matches = EXIT_LINE.findall(log)
    return int(matches[-1]) if matches else None


def lookup(found: StatusMap, test_id: str) -> str | None:
    """The status of `test_id`: exact; else the official parser's key for an id with spaces (its first
    word); else a summary id pytest truncated with `...`. Several matches: any non-pass wins."""
    if test_id in found:
        return found[test_id]
    hits = [status for name, status in found.items()
            if name.split(" ")[0] == test_id or test_id.split(" ")[0] == name
            or (name.endswith("...") and len(name) > 3 and test_id.startswith(name[:-3]))]
    if not hits:
        return None
    bad = [s for s in hits if s not in GOOD]
    return bad[0] if bad else hits[0]


def parse_pro_output(text: str) -> StatusMap:
    """SWE-bench Pro's output.json (`{"tests": [{"name": ..., "status": ...}]}`) as a status map."""
    data = json.loads(text)
    tests = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(tests, list):
        raise ValueError("output.json has no `tests` list")
    return {str(t["name"]): str(t["status"]).upper() for t in tests if isinstance(t, dict) and "name" in t}


def run_pro_parser(parser_script: str, stdout: str, stderr: str, *, timeout: float = 300) -> StatusMap:
    """Run a SWE-bench Pro task's own `parser.py STDOUT STDERR OUTPUT` on a run's logs and read its output.
    A parser that fails or writes nothing raises ValueError with its error output."""
    with tempfile.TemporaryDirectory(prefix="leaf-pro-parser-") as tmp:
        folder = Path(tmp)
        (folder / "parser.py").write_text(parser_script, encoding="utf-8")
        (folder / "stdout.log").write_text(stdout, encoding="utf-8")
        (folder / "stderr.log").write_text(stderr, encoding="utf-8")
        run = run_process([sys.executable, "parser.py", "stdout.log", "stderr.log", "output.json"], cwd=folder,
                          timeout=timeout, env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": tmp, "LANG": "C.UTF-8"})
        output = folder / "output.json"
        if not run.ok or not output.is_file():
            why = "timed out" if run.timed_out else f"exit {run.returncode}"
            raise ValueError(f"parser.py {why}: {(run.stderr.strip() or run.stdout.strip())[-300:]}")
        return parse_pro_output(output.read_text(encoding="utf-8"))
