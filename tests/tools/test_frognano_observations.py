"""Every tool call of the differential gets the observation FrogNano's harness gave it, byte for byte.

The expected texts (`frognano_observations.json`) were recorded from FrogNano's harness on the same calls
(see `frognano_cases.py`). A case where leaf deliberately answers otherwise is listed in `DEVIATIONS` with
leaf's text and the reason: FrogNano crashed, hung, corrupted a file or lost data there, or it is leaf's
case-insensitive tool names. The workspace is not confined (eval, TaskPilot and RL run it so).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from leaf_cli.llm.messages import ToolCall
from leaf_cli.tools import Workspace, run_tool_call
from tests.tools.frognano_cases import CASES, Case, fill, setup

EXPECTED: dict[str, object] = json.loads((Path(__file__).parent / "frognano_observations.json").read_text("utf-8"))

DEVIATIONS: dict[str, tuple[str, str]] = {
    "write-missing-content": ("ValueError: content is required",
                              "FrogNano wrote an empty file (`Wrote f.txt (0 bytes).`): the old content was lost"),
    "write-null-content": ("ValueError: content is required", "FrogNano wrote the text `None` over the file"),
    "write-object-content": ("Wrote c.json (32 bytes).",
                             "FrogNano wrote Python's repr (`{'a': [1, True]}`), not JSON; leaf writes the JSON"),
    "edit-binary": ("BinaryFileError: img.bin is a binary file (NUL bytes in its first 8 KB); the text tools do not "
                    "change it", "FrogNano decoded with replacement and wrote UTF-8 back: every invalid byte corrupted"),
    "lowercase-tool": ("f.txt\n1. one\n2. two\n3. three\n4. four\n5. five",
                       "tool names match case-insensitively in leaf (the paper writes them in lower case)"),
}


def observe(case: Case, tmp_path: Path) -> tuple[str, Path]:
    root = tmp_path / "work"
    root.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    setup(case, root)
    ws = Workspace(root, env={**os.environ, "HOME": str(home)}, confined=False)
    try:
        text = run_tool_call(ToolCall(id="c1", name=case.tool, arguments=fill(case.args, root)), ws).text
    finally:
        ws.end_episode()
    return text.replace(str(root.parent / "out"), "{out}").replace(str(root), "{root}"), root


def matches(text: str, expected: object) -> bool:
    if isinstance(expected, str):
        return text == expected
    assert isinstance(expected, dict)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return (len(text), digest, text[:300], text[-300:]) == (expected["len"], expected["sha256"], expected["head"], expected["tail"])


def test_every_case_has_an_expected_text() -> None:
    assert sorted(EXPECTED) == sorted(c.id for c in CASES)
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_observation_is_frognanos(case: Case, tmp_path: Path) -> None:
    text, _ = observe(case, tmp_path)
    if case.id in DEVIATIONS:
        assert text == DEVIATIONS[case.id][0]
        assert not matches(text, EXPECTED[case.id])
    else:
        expected = EXPECTED[case.id]
        assert matches(text, expected), f"leaf: {text[:400]!r}\nFrogNano: {str(expected)[:400]!r}"


def test_identical_count() -> None:
    """The closing note's figure: observations identical to FrogNano's, of all differential cases."""
    identical = len(CASES) - len(DEVIATIONS)
    assert set(DEVIATIONS) <= {c.id for c in CASES}
    print(f"observations identical to FrogNano's: {identical}/{len(CASES)}")
    assert identical >= len(CASES) - 5
