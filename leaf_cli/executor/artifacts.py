"""Files a remote job wrote on its node, carried back to the driver's output folder."""

from __future__ import annotations

import os
from pathlib import Path


def pack(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by relative path."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def unpack(files: dict[str, bytes], dest: Path) -> None:
    """Write `files` under `dest`, each atomically (a reader never sees half a trajectory). A path that would
    leave `dest` is refused: the job's files are untrusted data."""
    root = dest.resolve()
    for rel, data in files.items():
        target = (root / rel).resolve()
        if root not in target.parents:
            raise ValueError(f"a remote job returned a file outside its output folder: {rel!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_bytes(data)
        os.replace(partial, target)


def rebased(path: str | None, old: Path, new: Path) -> str | None:
    """`path` moved from under `old` to the same place under `new` (other paths unchanged)."""
    if path is None:
        return None
    try:
        return str(new / Path(path).relative_to(old))
    except ValueError:
        return path
