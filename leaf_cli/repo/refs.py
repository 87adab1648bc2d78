"""A git dir's refs read as files (loose refs and packed-refs), without git and without following a link.

Undo reads them before it writes the recorded git dir back, to tell the user which refs made during the
run it removed; asking git would follow whatever `commondir` or `gitdir:` the agent planted.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

_ID = re.compile(rb"^([0-9a-f]{40}|[0-9a-f]{64})$")


def read_refs(common_dir: Path, git_dir: Path) -> dict[str, str]:
    """Every ref name and the object it names (symbolic refs left out); loose refs win over packed ones."""
    found = _packed(common_dir / "packed-refs")
    for base in dict.fromkeys((common_dir, git_dir)):
        found.update(_loose(base))
    return found


def read_head(git_dir: Path, common_dir: Path) -> tuple[str | None, str | None]:
    """(the object HEAD names, the branch it points at): (None, branch) on an unborn branch, (None, None)
    when HEAD is unreadable."""
    body = _read_small(git_dir / "HEAD")
    if body is None:
        return None, None
    if body.startswith(b"ref: "):
        branch = os.fsdecode(body[5:].strip())
        return read_refs(common_dir, git_dir).get(branch), branch
    return (body.decode(), None) if _ID.match(body) else (None, None)


def _read_small(path: Path) -> bytes | None:
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as fh:
            return fh.read(4096).strip()
    except OSError:
        return None


def _packed(path: Path) -> dict[str, str]:
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return {}
        lines = path.read_bytes().splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines:
        sha, _, name = line.partition(b" ")
        if _ID.match(sha) and name.startswith(b"refs/"):
            found[os.fsdecode(name)] = sha.decode()
    return found


def _loose(base: Path) -> dict[str, str]:
    found = {}
    refs = base / "refs"
    try:
        if not stat.S_ISDIR(os.lstat(refs).st_mode):
            return {}
    except OSError:
        return {}
    for dirpath, _dirnames, filenames in os.walk(refs):  # os.walk does not enter linked folders
        for name in filenames:
            path = os.path.join(dirpath, name)
            body = None if name.endswith(".lock") else _read_small(Path(path))
            if body is not None and _ID.match(body):
                found[os.path.relpath(path, base).replace(os.sep, "/")] = body.decode()
    return found
