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
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode) or name.endswith(".lock"):
                    continue
                with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as fh:
                    body = fh.read(100).strip()
            except OSError:
                continue
            if _ID.match(body):
                found[os.path.relpath(path, base).replace(os.sep, "/")] = body.decode()
    return found
