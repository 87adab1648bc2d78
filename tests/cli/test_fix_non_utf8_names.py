"""A file name that is not UTF-8 in a Glob result does not crash `leaf fix` (trajectory, JSON, terminal)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.fixcli import call, leaf_process, script, turn


@pytest.mark.parametrize("json_mode", [True, False])
def test_non_utf8_file_name_in_a_glob_result(git_repo: Path, tmp_path: Path, json_mode: bool) -> None:
    open(os.path.join(os.fsencode(git_repo), b"caf\xe9.txt"), "wb").close()
    spec = script(tmp_path / "s.jsonl", turn(call("Glob", pattern="*.txt")), {"content": "listed"})
    args = ["fix", *(["--json"] if json_mode else []), "--yes", "--sandbox", "none", "--workdir", str(git_repo),
            "--model", spec, "list the text files"]
    proc = leaf_process(*args, cwd=git_repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode(errors="replace")
    assert b"Traceback" not in err
    if json_mode:
        result = json.loads(out)
        assert result["exit_reason"] == "final_answer"
        assert result["messages"][3]["content"] == "caf\ufffd.txt"
