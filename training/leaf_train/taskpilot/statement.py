"""Problem statements written from the failing tests' observable behaviour, at a specificity level.

Levels (DESIGN.md: underspecified ≈ 0% solved, behaviourally precise ≈ 50%, solution-localizing ≈ 100%):
  0 symptom   - the package and the area (test module) that regressed; nothing else
  1 behaviour - plus the behaviours that broke, from the failing tests' names
  2 example   - plus one observed failure: what was expected and what came back
  3 contract  - plus every failing test's node id and message, and how to reproduce
  4 localized - plus the file and function holding the defect (never the line)
The changed source line is never quoted: observations that contain it are left out (leak filter).
"""

from __future__ import annotations

import re

LEVELS = ("symptom", "behaviour", "example", "contract", "localized")
MAX_LEVEL = len(LEVELS) - 1
_MAX_MESSAGE = 400


def write(package: str, observations: dict[str, str], level: int, *, file: str = "", function: str = "",
          secret_lines: list[str] = ()) -> str:
    """The statement at `level` for a bug whose F2P tests failed with `observations` (node id -> message).

    `file`/`function` are used only at level 4; `secret_lines` (the changed source lines) must not appear.
    """
    level = max(0, min(MAX_LEVEL, level))
    tests = sorted(observations)
    messages = {t: _clean(observations[t], secret_lines) for t in tests}
    areas = sorted({_area(t) for t in tests})
    parts = [f"Something in `{package}` regressed: behaviour covered by its {', '.join(areas)} tests is wrong now, "
             "although it used to work. Find the cause and fix it in the library code; do not change the tests."]
    if level >= 1:
        behaviours = sorted({_behaviour(t) for t in tests})[:5]
        parts.append("What breaks: " + "; ".join(behaviours) + ".")
    if level == 2:
        example = next(((t, m) for t, m in messages.items() if m), None)
        if example is not None:
            parts.append(f"For example, checking {_behaviour(example[0])} fails with:\n\n    "
                         + example[1].replace("\n", "\n    "))
    if level >= 3:
        lines = [f"- `{t}`" + (f": {m.splitlines()[0]}" if m else "") for t, m in list(messages.items())[:8]]
        more = len(tests) - 8
        parts.append("These tests fail and must pass after the fix (the rest of the suite must keep passing):\n"
                     + "\n".join(lines) + (f"\n- ... and {more} more" if more > 0 else ""))
        parts.append(f"Reproduce with `python -m pytest {' '.join(_files(tests))}`.")
    if level >= 4 and file:
        where = f"in `{function}` in `{file}`" if function else f"in `{file}`"
        parts.append(f"The defect is {where}.")
    return "\n\n".join(parts)


def leaks(statement: str, secret_lines: list[str]) -> bool:
    """True when the statement quotes a changed source line (stripped, long enough to be specific)."""
    return any(len(s.strip()) >= 8 and s.strip() in statement for s in secret_lines)


def _clean(message: str | None, secret_lines: list[str]) -> str:
    """The message's first lines without paths or the changed source; '' when nothing usable is left."""
    if not message:
        return ""
    lines = [re.sub(r"(/[^\s:'\"]+)+\.py", "<file>", l.rstrip()) for l in message.splitlines() if l.strip()]
    text = "\n".join(lines[:4])[:_MAX_MESSAGE]
    return "" if leaks(text, secret_lines) else text


def _area(nodeid: str) -> str:
    stem = nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")
    return stem.removeprefix("test_").removesuffix("_test") or stem


def _behaviour(nodeid: str) -> str:
    """`tests/test_x.py::TestMerge::test_merge_sorted_key[3]` -> 'merge sorted key (case 3)'."""
    name = nodeid.split("::")[-1]
    params = ""
    if "[" in name:
        name, params = name.split("[", 1)
        params = f" (case {params.rstrip(']')})"
    words = name.removeprefix("test_").removeprefix("test").replace("_", " ").strip() or name
    return words + params


def _files(tests: list[str]) -> list[str]:
    return sorted({t.split("::")[0] for t in tests})[:4]
