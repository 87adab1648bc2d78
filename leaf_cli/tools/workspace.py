"""The folder the tools work in, and the rules that keep them inside it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


class OutsideWorkspaceError(PermissionError):
    """A path resolves outside the workdir (through `..`, an absolute path or a symlink)."""


@dataclass
class Workspace:
    """The workdir plus how Bash runs there.

    `env` is the environment Bash commands get (None: leaf's own, scrubbed by the caller if it wants);
    `bash_prefix` wraps each command (for example a bubblewrap argv) and is empty for a plain subprocess.
    """

    root: Path
    env: dict[str, str] | None = None
    bash_prefix: list[str] = field(default_factory=list)
    bash_default_timeout: float = 120.0

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()

    def resolve(self, path: str) -> Path:
        """The real path for `path` (relative to the root, or absolute), refused when it leaves the root."""
        if not path or not path.strip():
            raise ValueError("file_path is empty")
        candidate = Path(os.path.expanduser(path))
        if not candidate.is_absolute():
            candidate = self.root / candidate
        real = Path(os.path.realpath(candidate))
        if real != self.root and self.root not in real.parents:
            raise OutsideWorkspaceError(f"{path} is outside the working directory {self.root}")
        return real

    def display(self, path: Path) -> str:
        """How a path is shown to the model: relative to the workdir when inside it."""
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return str(path)
        return str(rel) if str(rel) != "." else "."
