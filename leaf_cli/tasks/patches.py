"""Unified diffs: split by file, drop protected paths, and apply with SWE-bench's ladder."""

from __future__ import annotations

import re
import shutil
from enum import Enum
from pathlib import Path
from typing import Callable

from leaf_cli.tasks.proc import run_process

_HEADER = re.compile(r"^diff --git (?:\"?a/(.+?)\"?) (?:\"?b/(.+?)\"?)$")


class Applied(str, Enum):
    """How a patch went in: the first rung of the ladder that worked."""

    EMPTY = "empty"
    GIT_APPLY = "git_apply"
    GIT_APPLY_REJECT = "git_apply_reject"
    PATCH_FUZZ = "patch_fuzz"
    FAILED = "failed"


def split_files(diff: str) -> list[tuple[list[str], str]]:
    """The diff cut into per-file pieces: (paths the piece touches, its text). Text before the first
    `diff --git` header (a plain `---/+++` diff) is one piece with the paths from its headers."""
    pieces: list[tuple[list[str], str]] = []
    current: list[str] = []
    for line in diff.splitlines(keepends=True):
        if line.startswith("diff --git ") and current:
            pieces.append(_piece(current))
            current = []
        current.append(line)
    if current:
        pieces.append(_piece(current))
    return pieces


def _piece(lines: list[str]) -> tuple[list[str], str]:
    paths: set[str] = set()
    match = _HEADER.match(lines[0].rstrip("\n"))
    if match:
        paths.update(match.groups())
    for line in lines:
        for prefix in ("--- a/", "+++ b/", "rename from ", "rename to ", "copy from ", "copy to "):
            if line.startswith(prefix):
                paths.add(line[len(prefix):].rstrip("\n").split("\t")[0])
    return sorted(paths), "".join(lines)


def without_paths(diff: str, is_protected: Callable[[str], bool]) -> tuple[str, list[str]]:
    """The diff minus every file piece touching a protected path, and the protected paths it touched."""
    kept, touched = [], []
    for paths, text in split_files(diff):
        hit = [p for p in paths if is_protected(p)]
        if hit:
            touched.extend(hit)
        else:
            kept.append(text)
    return "".join(kept), sorted(set(touched))


def apply_patch(diff: str, tree: Path, pristine: Path) -> tuple[Applied, str]:
    """Apply `diff` to `tree`: `git apply`, then `git apply --reject`, then `patch --fuzz=5`.

    Each rung starts again from `pristine` (a half-applied rung must not leak into the next).
    Returns how it went in and the failing rungs' messages.
    """
    if not diff.strip():
        return Applied.EMPTY, ""
    if not diff.endswith("\n"):
        diff += "\n"
    messages = []
    rungs = [
        (Applied.GIT_APPLY, ["git", "apply", "--verbose", "--whitespace=nowarn", "-"]),
        (Applied.GIT_APPLY_REJECT, ["git", "apply", "--verbose", "--reject", "--whitespace=nowarn", "-"]),
        (Applied.PATCH_FUZZ, ["patch", "--batch", "--fuzz=5", "-p1", "--no-backup-if-mismatch", "-r", "-"]),
    ]
    for index, (how, argv) in enumerate(rungs):
        if index:
            restore(tree, pristine)
        result = run_process(argv, cwd=tree, timeout=120, stdin=diff,
                             env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tree), "GIT_CONFIG_NOSYSTEM": "1"})
        if result.ok:
            return how, "\n".join(messages)
        messages.append(f"{how.value}: {(result.stderr.strip() or result.stdout.strip())[-300:]}")
    restore(tree, pristine)
    return Applied.FAILED, "\n".join(messages)


def restore(tree: Path, pristine: Path) -> None:
    """Make `tree` an exact copy of `pristine` again (its .git folder, if any, kept)."""
    for child in tree.iterdir():
        if child.name == ".git":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    shutil.copytree(pristine, tree, symlinks=True, dirs_exist_ok=True)
