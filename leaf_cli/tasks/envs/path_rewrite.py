"""Container paths -> host paths, for a verifier script run on the host-path sandboxes (subprocess, bwrap).

There is no image there: `tests/` is copied to a scratch folder, and in that copy (and in the command) every
literal container path is rewritten to a host path: /tests -> <scratch>/tests, /logs/verifier ->
<scratch>/logs/verifier, /logs -> <scratch>/logs, the workdir (e.g. /app) -> the workspace.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from leaf_cli.tasks.format.reward_spec import RewardSpec


def host_mapping(spec: RewardSpec, scratch: Path, workspace: Path) -> dict[str, str]:
    """Container path -> host path, for the host-path sandboxes."""
    return {spec.container_tests_dir: str(scratch / "tests"), spec.logs_dir: str(scratch / "logs" / "verifier"),
            "/logs": str(scratch / "logs"), spec.workdir: str(workspace)}


def rewrite(text: str, mapping: dict[str, str]) -> str:
    """Replace each container path used as a whole path component (longest first, in one pass)."""
    keys = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.\-/])(" + "|".join(re.escape(k) for k in keys) + r")(?=[/\s\"'`;:|&)<>]|$)")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def copy_rewritten(src: Path, dest: Path, mapping: dict[str, str]) -> None:
    """Copy `src` to `dest`, rewriting container paths in every UTF-8 text file (binary files copied as is)."""
    shutil.copytree(src, dest, symlinks=True)
    for path in dest.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite(text, mapping)
        if new != text:
            path.write_text(new, encoding="utf-8")
