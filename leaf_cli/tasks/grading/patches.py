"""Unified diffs: split by file, drop protected paths, and apply with SWE-bench 5.0.2's ladder.

The ladder (`run_evaluation.py` of swebench 5.0.2): `git apply --verbose`, `--3way`, `--reject`, then
`patch --batch --forward --fuzz=5 -p1`; the tree is reset between rungs (a `--reject` rung leaves the
hunks it could apply behind, and without the reset 4.1.0's `patch` rung found hunk 1 "already applied",
reversed it and failed); when every rung fails, `git apply --check --reverse` accepts a patch the tree
already holds. The same ladder runs here (leaf's own grading) and in the grading containers
(`swebench.apply_script`), from the one table below.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from enum import Enum
from pathlib import Path
from typing import Callable

from leaf_cli.tasks.envs.proc import run_process

_HEADER = re.compile(r"^diff --git (?:\"?a/(.+?)\"?) (?:\"?b/(.+?)\"?)$")


class Applied(str, Enum):
    """How a patch went in: the first rung of the ladder that worked."""

    EMPTY = "empty"
    GIT_APPLY = "git_apply"
    GIT_APPLY_3WAY = "git_apply_3way"
    GIT_APPLY_REJECT = "git_apply_reject"
    PATCH_FUZZ = "patch_fuzz"
    ALREADY_APPLIED = "already_applied"
    FAILED = "failed"


LADDER: list[tuple[Applied, list[str]]] = [
    (Applied.GIT_APPLY, ["git", "apply", "--verbose"]),
    (Applied.GIT_APPLY_3WAY, ["git", "apply", "--verbose", "--3way"]),
    (Applied.GIT_APPLY_REJECT, ["git", "apply", "--verbose", "--reject"]),
    (Applied.PATCH_FUZZ, ["patch", "--batch", "--forward", "--fuzz=5", "-p1", "-i"]),
]
"""Each rung's command; the patch file's path goes last."""
REVERSE_CHECK = ["git", "apply", "--check", "--reverse"]


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
    """Apply `diff` to `tree` (a git repository whose files equal `pristine`) with the ladder; each rung after
    the first starts again from `pristine`. Returns how it went in and the failing rungs' messages."""
    if not diff.strip():
        return Applied.EMPTY, ""
    messages = []
    with tempfile.TemporaryDirectory(prefix="leaf-patch-") as tmp:
        patch_file = Path(tmp) / "patch.diff"
        patch_file.write_text(diff if diff.endswith("\n") else diff + "\n", encoding="utf-8")
        for index, (how, argv) in enumerate(LADDER):
            if index:
                restore(tree, pristine)
            result = _run([*argv, str(patch_file)], tree)
            if result.ok:
                return how, "\n".join(messages)
            messages.append(f"{how.value}: {(result.stderr.strip() or result.stdout.strip())[-300:]}")
        if _run([*REVERSE_CHECK, str(patch_file)], tree).ok:  # on the tree the last rung left, as 5.0.2 checks
            return Applied.ALREADY_APPLIED, "\n".join(messages)
    restore(tree, pristine)
    return Applied.FAILED, "\n".join(messages)


def _run(argv: list[str], tree: Path):  # noqa: ANN202 - RunResult
    return run_process(argv, cwd=tree, timeout=120,
                       env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tree), "GIT_CONFIG_NOSYSTEM": "1"})


def restore(tree: Path, pristine: Path) -> None:
    """Make `tree` an exact copy of `pristine` again (its .git folder kept, its index reset: `--3way`
    stages what it applies)."""
    for child in tree.iterdir():
        if child.name == ".git":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    shutil.copytree(pristine, tree, symlinks=True, dirs_exist_ok=True)
    if (tree / ".git").exists():
        _run(["git", "reset", "-q"], tree)
