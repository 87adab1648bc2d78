"""Gitignore-style globs over a tree's relative paths (protected and hidden paths)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator

import pathspec


def matcher(patterns: list[str]) -> Callable[[str], bool]:
    """A predicate telling whether a relative POSIX path matches any of `patterns` (gitwildmatch)."""
    if not patterns:
        return lambda _path: False
    try:  # pathspec >= 0.12 names git's rules "gitignore"; older versions only know "gitwildmatch"
        spec = pathspec.PathSpec.from_lines("gitignore", patterns)
    except (KeyError, LookupError):
        spec = pathspec.PathSpec.from_lines("gitwildmatch", patterns)
    return spec.match_file


def tree_files(root: Path) -> Iterator[str]:
    """Relative POSIX paths of every file and symlink under `root`, `.git` left out (symlinks not followed)."""
    for folder, dirs, files in os.walk(root):
        links = sorted(d for d in dirs if os.path.islink(os.path.join(folder, d)))
        dirs[:] = sorted(d for d in dirs if d != ".git" and d not in links)
        for name in sorted(files) + links:
            yield Path(os.path.relpath(os.path.join(folder, name), root)).as_posix()
