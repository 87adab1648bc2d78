"""File names that are not UTF-8, shown as FrogNano's harness showed them: U+FFFD, never a lone surrogate.

Python names such a byte by a lone surrogate (b"\\xe9" is "\\udce9"). The harness's runner printed its result
to stdout, which wrote the byte back (the pod's C/POSIX locale puts Python in UTF-8 mode, whose stdout uses
surrogateescape), and the runtime decoded the runner's output with replacement: the model saw U+FFFD. The
`harness_print` reference below is that path, run for real in a Python subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leaf_cli.llm.messages import ToolCall
from leaf_cli.tools import Workspace, run_tool_call
from leaf_cli.tools.output import as_shown

NAME = os.fsdecode(b"caf\xe9.txt")  # "caf\udce9.txt"


def harness_print(text: str) -> str:
    """What the model saw of `text` printed by the harness's runner: stdout in UTF-8 mode, read back with
    replacement."""
    code = "import sys, json; print(json.loads(sys.stdin.read()), end='')"
    out = subprocess.run([sys.executable, "-X", "utf8", "-c", code], input=json.dumps(text).encode(),
                         capture_output=True, check=True, timeout=60).stdout
    return out.decode("utf-8", "replace")


@pytest.fixture
def odd(tmp_path: Path) -> Path:
    """A workdir holding a file whose name is latin-1 bytes, and one under a folder named the same way."""
    root = tmp_path / "work"
    root.mkdir()
    (root / NAME).write_bytes(b"x\n")
    (root / os.fsdecode(b"d\xff")).mkdir()
    (root / os.fsdecode(b"d\xff") / "in.txt").write_bytes(b"y\n")
    assert os.fsencode(NAME) in os.listdir(os.fsencode(root))  # the attack took: a real non-UTF-8 name on disk
    return root


def observe(root: Path, name: str, confined: bool = True, **arguments: object) -> str:
    workspace = Workspace(root, env={**os.environ, "HOME": str(root.parent)}, confined=confined)
    try:
        text = run_tool_call(ToolCall(id="t", name=name, arguments=arguments), workspace).text
    finally:
        workspace.end_episode()
    text.encode("utf-8")  # strict: no lone surrogate reaches the model, a trajectory file or a tokenizer
    return text


@pytest.mark.parametrize("confined", [True, False])
def test_glob_shows_replacement_characters(odd: Path, confined: bool) -> None:
    raw = "\n".join(sorted([NAME, os.fsdecode(b"d\xff") + "/in.txt"]))  # the harness's glob result, before printing
    expected = harness_print(raw)
    assert expected == "caf\ufffd.txt\nd\ufffd/in.txt"
    assert observe(odd, "Glob", confined, pattern="**/*") == expected
    assert observe(odd, "Glob", confined, pattern="*.txt") == harness_print(NAME)


@pytest.mark.parametrize("confined", [True, False])
def test_read_header_and_errors(odd: Path, confined: bool) -> None:
    assert observe(odd, "Read", confined, file_path=NAME) == harness_print(f"{NAME}\n1. x") == "caf\ufffd.txt\n1. x"
    # An OS error names the path through repr, so the harness showed `\udce9` as six ASCII characters: kept.
    missing = observe(odd, "Read", confined, file_path=NAME + ".gone")
    assert missing == f"FileNotFoundError: [Errno 2] No such file or directory: '{odd}/caf\\udce9.txt.gone'"


def test_a_confined_refusal_names_the_path_with_replacement_characters(odd: Path, tmp_path: Path) -> None:
    outside = os.fsdecode(os.fsencode(str(tmp_path)) + b"/\xfe/x.txt")
    text = observe(odd, "Read", True, file_path=outside)
    assert text.startswith(f"PermissionError: {tmp_path}/\ufffd/x.txt is outside the working directory")


def test_write_names_the_file_with_replacement_characters(odd: Path) -> None:
    name = os.fsdecode(b"new\xe9.txt")
    assert observe(odd, "Write", file_path=name, content="z") == harness_print(f"Wrote {name} (1 bytes).")
    assert (odd / name).read_bytes() == b"z"


def test_bash_output_that_is_not_utf8_gives_the_harness_error(odd: Path) -> None:
    """Bash's pipes were decoded strictly by the harness (`universal_newlines=True`): its observation of `ls`
    here is that decode error, with no surrogate in it."""
    listing = subprocess.run(["/bin/bash", "-lc", "ls"], cwd=odd, capture_output=True, check=True,
                             env={**os.environ, "HOME": str(odd.parent)}, timeout=60).stdout
    with pytest.raises(UnicodeDecodeError) as harness:
        listing.decode("utf-8")
    assert observe(odd, "Bash", command="ls") == f"UnicodeDecodeError: {harness.value}"


@pytest.mark.parametrize(("text", "shown"), [
    ("plain", "plain"),
    (os.fsdecode(b"\xe9\xff"), "\ufffd\ufffd"),
    (os.fsdecode("é".encode()[:1]) + os.fsdecode("é".encode()[1:]), "é"),  # escaped bytes that form UTF-8
    ("a\ud800b", "a\ufffdb"),  # a surrogate that names no byte
    ("\\udce9", "\\udce9"),  # repr's escape: text, kept
])
def test_as_shown(text: str, shown: str) -> None:
    assert as_shown(text) == shown
