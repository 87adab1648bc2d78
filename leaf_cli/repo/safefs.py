"""File operations of undo that never follow a link the agent may have made, and never delete unknown data.

Undo runs after every process of the run is gone (the reaper ends them; a live run is refused), so nothing
changes the tree under it while it works: checking each path component with lstat before writing through
it is enough. A symlink, FIFO or file where a folder must be is removed (a link loses nothing: its target
is left alone); what may hold data leaf never recorded (a folder, a git dir) is moved aside, never deleted.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path


class Aside:
    """Where undo puts what it will not delete, and the list of what it put there (original, new place)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.moved: list[tuple[str, str]] = []

    def move(self, path: Path) -> Path:
        """Move `path` (never followed) into the aside folder, keeping its name; return the new place."""
        self.folder.mkdir(parents=True, exist_ok=True)
        dest = self.folder / path.name
        n = 1
        while dest.exists() or dest.is_symlink():
            dest = self.folder / f"{path.name}.{n}"
            n += 1
        try:
            os.rename(path, dest)
        except OSError:  # another file system: copy (links as links), then remove the original
            shutil.move(str(path), str(dest))
        self.moved.append((str(path), str(dest)))
        return dest


def default_aside(state_root: Path) -> Aside:
    return Aside(state_root / "aside" / time.strftime("%Y%m%d-%H%M%S"))


def kind(path: Path | str) -> str:
    """'dir', 'file', 'symlink', 'special' or 'missing' (never following a link)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "missing"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "symlink" if stat.S_ISLNK(mode) else "special"


def remove(path: Path | str) -> None:
    """Remove one entry without following it: a link itself, a file, a FIFO, or a whole folder."""
    what = kind(path)
    if what == "dir":
        shutil.rmtree(path)  # rmtree never follows links inside (it checks each entry, fd-based on Linux)
    elif what != "missing":
        os.unlink(path)


def ensure_dir(path: Path, anchor: Path, aside: Aside) -> None:
    """Make every component of `path` below `anchor` a real folder: a link, file or FIFO in the way is
    removed (a regular file is moved aside: it may be data), a missing one is made."""
    rel = os.path.relpath(path, anchor)
    current = anchor
    for part in [] if rel == "." else Path(rel).parts:
        current = current / part
        what = kind(current)
        if what == "dir":
            continue
        if what == "file":
            aside.move(current)
        elif what != "missing":
            os.unlink(current)
        current.mkdir(mode=0o755)


def same_file(path: Path, data: Path) -> bool:
    """Whether `path` is a regular file holding exactly the bytes of `data` (not followed if a link)."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != data.stat().st_size:
            return False
        with open(path, "rb", opener=_nofollow) as a, open(data, "rb") as b:
            while True:
                x, y = a.read(1 << 20), b.read(1 << 20)
                if x != y:
                    return False
                if not x:
                    return True
    except OSError:
        return False


def write_copy(src: Path, dest: Path, mode: int) -> None:
    """Put a fresh regular file at `dest` (whatever entry was there is removed first, not followed)
    holding the bytes of `src`, streamed."""
    remove(dest)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as out, open(src, "rb") as fin:
        shutil.copyfileobj(fin, out, 1 << 20)
        os.fchmod(out.fileno(), stat.S_IMODE(mode))
    st = os.stat(src)
    os.utime(dest, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)


def write_symlink(target: str, dest: Path) -> None:
    remove(dest)
    os.symlink(target, dest)


def _nofollow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
