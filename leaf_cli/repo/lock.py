"""One leaf run per repository at a time: an advisory lock file per work tree under leaf's state folder.

The lock is an `flock` on a file descriptor leaf holds for the whole run, so it is released by the kernel
however leaf ends (kill -9 included); the file's text (run id and pid) is only for the message. The
descriptor is not inherited by the agent's commands (Python opens it close-on-exec).
"""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

from leaf_cli.errors import LeafError


class RepoBusy(LeafError):
    """Another leaf run holds this work tree."""


def lock_path(state_root: Path, top: Path) -> Path:
    key = hashlib.sha256(str(top.resolve()).encode()).hexdigest()[:16]
    return state_root / "locks" / f"{top.name or 'root'}-{key}.lock"


class RepoLock:
    """Held from `acquire` to `release` (or the process's end)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self, owner: str) -> "RepoLock":
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = self.path.read_text(errors="replace").strip() or "another leaf process"
            raise RepoBusy(f"another leaf run is working in this repository ({holder}); wait for it to end "
                           "or stop it first") from None
        os.ftruncate(fd, 0)
        os.write(fd, owner.encode())
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def is_held(path: Path) -> bool:
    """Whether some process holds the lock at `path` now."""
    import fcntl

    if not path.is_file():
        return False
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False
