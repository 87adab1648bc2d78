"""Test-log parsers of the official benchmark harnesses: the only place leaf reads test results from text.

SWE-bench grades a run by parsing the log of the repository's own test command; a task records which
parser it needs as `install_config.log_parser = "swebench:<name>"` (rows of swebench 5 name theirs
`parse_log_<name>`, read through the same table). The rules are swebench 5.0.2's, down to its quirks,
because a parser that reads a log differently decides a different score; `tests/tasks/test_swebench_parity.py`
runs the official functions on real logs and compares the maps:

- `pytest`: a line that starts with a status word: FAILED lines lose ` - ` (so the message's words follow
  the id), the second word is the test. `SKIPPED [3] file:line: reason` is a count, not a test.
- `pytest_options`: the same, a parameter that is a file path shortened to its last component.
- `pytest_v2`: colour codes and control characters (tab included) stripped; a line starting with a status
  keys everything after it (an id with spaces stays whole; a FAILED line is cut at its first ` - `, an
  `XFAIL id - reason` line keeps the reason, as 5.0.2 does); a line ending with a status keys the words
  before it (verbose output, and the `PASSED` then teardown `ERROR` pair: the later line wins).
- `django` (`runtests.py --verbosity 2`): `name ... ok|skipped|FAIL|ERROR`, `FAIL: name` / `ERROR: name`
  headers, an `ok` alone after output that split the line, three known split-line shapes.
- `sympy` (`bin/test -C --verbose`): `test_x ok|F|E` lines and `____ path.py:test_x ____` banners.
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

from leaf_cli.tasks.envs.proc import run_process

FAILED, PASSED, SKIPPED, ERROR, XFAIL = "FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL"
STATUSES = (FAILED, PASSED, SKIPPED, ERROR, XFAIL)
GOOD = {PASSED, XFAIL}
"""SWE-bench: a test passed when its status is PASSED or XFAIL."""

START_MARKER = ">>>>> Start Test Output"
END_MARKER = ">>>>> End Test Output"
BAD_RUN_MARKERS = (">>>>> Patch Apply Failed", ">>>>> Reset Failed", ">>>>> Tests Errored", ">>>>> Tests Timed Out")
"""A log holding any of these has no valid results (the harness's own failure lines)."""
EXIT_LINE = re.compile(r">>>>> Test Exit Code:\s*(-?\d+)")

StatusMap = dict[str, str]
_SKIP_COUNT = re.compile(r"^\[\d+\]$")
_COLOUR = re.compile(r"\[(\d+)m")
_CONTROL = str.maketrans("", "", "".join(chr(c) for c in range(1, 32)))


def _status_first(line: str) -> bool:
    return line.startswith(STATUSES)


def _is_skip_count(words: list[str]) -> bool:
    return words[0] == SKIPPED and bool(_SKIP_COUNT.match(words[1]))


def _summary_words(line: str) -> list[str] | None:
    """The words of a pytest summary line (`STATUS id ...`), or None when it is not one."""
    if not _status_first(line):
        return None
    words = (line.replace(" - ", " ") if line.startswith(FAILED) else line).split()
    return words if len(words) > 1 and not _is_skip_count(words) else None


def parse_pytest(log: str) -> StatusMap:
    """`pytest -rA` logs: the status word, then the test id."""
    found: StatusMap = {}
    for line in log.split("\n"):
        words = _summary_words(line)
        if words:
            found[words[1]] = words[0]
    return found


def parse_pytest_options(log: str) -> StatusMap:
    """pytest logs whose parameters may be file paths: `t[/tmp/abc/data.csv]` is keyed `t[/data.csv]`."""
    found: StatusMap = {}
    for line in log.split("\n"):
        words = _summary_words(line)
        if words:
            found[_short_option(words[1])] = words[0]
    return found


def _short_option(name: str) -> str:
    match = re.search(r"(.*?)\[(.*)\]", name)
    if not match:
        return name
    main, option = match.groups()
    if option.startswith("/") and not option.startswith("//") and "*" not in option:
        option = "/" + option.split("/")[-1]
    return f"{main}[{option}]"


def parse_pytest_v2(log: str) -> StatusMap:
    """pytest logs with colour codes or control characters (astropy, scikit-learn, sphinx)."""
    found: StatusMap = {}
    for raw in log.split("\n"):
        line = _COLOUR.sub("", raw).translate(_CONTROL)
        if _status_first(line):
            words = (line.split(" - ", 1)[0] if line.startswith(FAILED) else line).split()
            if len(words) >= 2 and not _is_skip_count(words):
                found[" ".join(words[1:])] = words[0]
        elif line.endswith(STATUSES):
            words = line.split()
            if len(words) >= 2:
                found[" ".join(words[:-1])] = words[-1]
    return found


def parse_matplotlib(log: str) -> StatusMap:
    """pytest summaries where matplotlib's parametrized ids print enum members (`MouseButton.LEFT` is 1)."""
    return parse_pytest(log.replace("MouseButton.LEFT", "1").replace("MouseButton.RIGHT", "3"))


def parse_seaborn(log: str) -> StatusMap:
    """seaborn's summaries: `FAILED id`, `PASSED id` and verbose `id PASSED ...` lines (others ignored)."""
    found: StatusMap = {}
    for line in log.split("\n"):
        words = line.split()
        if len(words) < 2:
            continue
        if line.startswith(FAILED):
            found[words[1]] = FAILED
        elif f" {PASSED} " in line:
            if words[1] == PASSED:
                found[words[0]] = PASSED
        elif line.startswith(PASSED):
            found[words[1]] = PASSED
    return found


_DJANGO_SPLIT_OK = [  # output printed between "name ..." and its "ok" on the next line
    r"^(.*?)\s\.\.\.\sTesting against Django installed in ((?s:.*?)) silenced\)\.\nok$",
    r"^(.*?)\s\.\.\.\sInternal Server Error: \/(.*)\/\nok$",
    r"^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$",
]
_DJANGO_OK = (" ... ok", " ... OK", " ...  OK")


def parse_django(log: str) -> StatusMap:
    """Django's runner at verbosity 2: `name ... ok`, `... skipped 'why'`, `... FAIL`, `... ERROR`, the
    `FAIL: name` / `ERROR: name` headers of the failure report, and `ok` after a split line."""
    found: StatusMap = {}
    last = None
    for raw in log.split("\n"):
        line = raw.strip()
        if "--version is equivalent to version" in line:  # a docstring test whose output spans lines
            found["--version is equivalent to version"] = PASSED
        if " ... " in line:
            last = line.split(" ... ")[0]
        suffix = next((s for s in _DJANGO_OK if line.endswith(s)), None)
        if suffix is not None:
            if line.startswith("Applying sites.0002_alter_domain_unique...test_no_migrations"):
                line = line.split("...", 1)[-1].strip()  # migration output glued to the test name
            found[line.rsplit(suffix, 1)[0]] = PASSED
        if " ... skipped" in line:
            found[line.split(" ... skipped")[0]] = SKIPPED
        if line.endswith(" ... FAIL"):
            found[line.split(" ... FAIL")[0]] = FAILED
        if line.startswith("FAIL:") and len(line.split()) > 1:
            found[line.split()[1].strip()] = FAILED
        if line.endswith(" ... ERROR"):
            found[line.split(" ... ERROR")[0]] = ERROR
        if line.startswith("ERROR:") and len(line.split()) > 1:
            found[line.split()[1].strip()] = ERROR
        if line.lstrip().startswith("ok") and last is not None:
            found[last] = PASSED
    for pattern in _DJANGO_SPLIT_OK:
        for match in re.finditer(pattern, log, re.MULTILINE):
            found[match.group(1)] = PASSED
    return found


def parse_sympy(log: str) -> StatusMap:
    """sympy's `bin/test --verbose`: `____ path.py:test_x ____` failure banners, then `test_x ok|F|E` lines."""
    found: StatusMap = {}
    for _, path, name, _ in re.findall(r"(_*) (.*)\.py:(.*) (_*)", log):
        found[f"{path}.py:{name}"] = FAILED
    for raw in log.split("\n"):
        line = raw.strip()
        if not line.startswith("test_"):
            continue
        for ending, status in ((" E", ERROR), (" F", FAILED), (" ok", PASSED)):
            if line.endswith(ending):
                found[line.split()[0]] = status
    return found


SWEBENCH_PARSERS: dict[str, Callable[[str], StatusMap]] = {
    "pytest": parse_pytest, "pytest_options": parse_pytest_options, "pytest_v2": parse_pytest_v2,
    "django": parse_django, "sympy": parse_sympy, "seaborn": parse_seaborn, "matplotlib": parse_matplotlib,
}
PARSER_ALIASES = {
    **{name: "pytest" for name in ("astroid", "flask", "marshmallow", "pvlib", "pyvista", "sqlfluff", "xarray")},
    **{name: "pytest_options" for name in ("pydicom", "requests", "pylint")},
    **{name: "pytest_v2" for name in ("astropy", "scikit", "sphinx")},
}
"""swebench 5's per-repository parser names that are one of the parsers above."""


def parser_key(name: str) -> str | None:
    """The table key for a recorded parser name (`swebench:django`, `django`, `parse_log_scikit`), or None
    when leaf does not read that log format."""
    key = name.split(":", 1)[1] if name.startswith("swebench:") else name
    key = key[len("parse_log_"):] if key.startswith("parse_log_") else key
    key = PARSER_ALIASES.get(key, key)
    return key if key in SWEBENCH_PARSERS else None


def get_parser(name: str) -> Callable[[str], StatusMap]:
    """The parser a task records; an unknown name lists the valid ones."""
    key = parser_key(name)
    if key is None:
        raise KeyError(f"unknown log parser {name!r}; known: {', '.join(sorted([*SWEBENCH_PARSERS, *PARSER_ALIASES]))}")
    return SWEBENCH_PARSERS[key]


def test_section(log: str) -> str | None:
    """The text between the start and end markers (the test command's output); None when either is missing."""
    if START_MARKER not in log or END_MARKER not in log:
        return None
    return log.split(START_MARKER, 1)[1].split(END_MARKER, 1)[0]


def exit_code(log: str) -> int | None:
    """The test command's exit code the grading script echoed after the end marker, if any (the first
    such line, as the official grader reads it)."""
    match = EXIT_LINE.search(log)
    return int(match.group(1)) if match else None


def lookup(found: StatusMap, test_id: str) -> str | None:
    """The status-map key for `test_id`, as swebench 5.0.2 resolves it: the exact id; else, for an id that
    pytest cut inside its parameters (more `[` than `]`), the first key it prefixes when all such keys agree
    on pass or fail. None when there is none."""
    if test_id in found:
        return test_id
    if test_id.count("[") > test_id.count("]"):
        keys = [k for k in found if k.startswith(test_id)]
        if keys and len({found[k] in GOOD for k in keys}) == 1:
            return keys[0]
    return None


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
