"""The parts of a git dir that are not objects or refs, saved as bytes and put back as bytes.

`.git/config`, hooks and `info/` decide what the user's next git command runs, so an agent that plants a
hook or a `core.fsmonitor` must not outlive `leaf undo`; merge, rebase, cherry-pick and bisect state files
are the user's work in flight. Each item is recorded as present (with its bytes and modes) or absent, and
restore makes it exactly that again: planted items are removed, changed ones rewritten, deleted ones back.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Protocol

# Shared by every worktree of a repository (under the common dir).
COMMON_ITEMS = ("config", "hooks", "info", "shallow", "logs/refs/stash")
# One worktree's own (under its git dir): its config and whatever operation it has in progress.
WORKTREE_ITEMS = ("config.worktree", "MERGE_HEAD", "MERGE_MODE", "MERGE_MSG", "AUTO_MERGE", "CHERRY_PICK_HEAD",
                  "REVERT_HEAD", "SQUASH_MSG", "ORIG_HEAD", "BISECT_LOG", "BISECT_START", "BISECT_TERMS",
                  "BISECT_NAMES", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK", "rebase-merge", "rebase-apply",
                  "sequencer")
# Only needed to rebuild a git dir the agent removed (refs and HEAD are restored through git otherwise).
REBUILD_ITEMS = ("HEAD", "packed-refs", "description")
_MANIFEST = "manifest.json"


class GitPaths(Protocol):
    git_dir: Path
    common_dir: Path


def _sources(paths: GitPaths) -> dict[str, Path]:
    items = {f"common/{n}": paths.common_dir / n for n in COMMON_ITEMS}
    items.update({f"worktree/{n}": paths.git_dir / n for n in WORKTREE_ITEMS})
    items.update({f"rebuild/{n}": (paths.git_dir if n == "HEAD" else paths.common_dir) / n for n in REBUILD_ITEMS})
    return items


def save(paths: GitPaths, folder: Path) -> None:
    """Copy every item that exists into `folder` and write which ones did."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    present: dict[str, str] = {}
    for key, src in _sources(paths).items():
        if src.is_symlink() or src.is_file():
            kind = "file"
        elif src.is_dir():
            kind = "dir"
        else:
            continue
        _copy(src, folder / key, kind)
        present[key] = kind
    (folder / _MANIFEST).write_text(json.dumps(present, indent=1))


def restore(paths: GitPaths, folder: Path, *, rebuild: bool = False) -> None:
    """Make every recorded item exactly what it was (absent ones removed); `rebuild` adds HEAD and packed-refs."""
    manifest = folder / _MANIFEST
    if not manifest.is_file():
        return  # a checkpoint from before leaf recorded these
    present: dict[str, str] = json.loads(manifest.read_text())
    for key, target in _sources(paths).items():
        if key.startswith("rebuild/") and not rebuild:
            continue
        _remove(target)
        if key in present:
            target.parent.mkdir(parents=True, exist_ok=True)
            _copy(folder / key, target, present[key])


def _copy(src: Path, dst: Path, kind: str) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if kind == "dir":
        shutil.copytree(src, dst, symlinks=True)
    else:
        shutil.copy2(src, dst, follow_symlinks=False)


def _remove(target: Path) -> None:
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
