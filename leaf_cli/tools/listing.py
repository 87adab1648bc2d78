"""Folder listings kept for one episode, so repeated Globs stat each folder instead of reading it again.

A folder's entries (names and kinds) change only through operations that update the folder's mtime and
ctime, so a listing stays valid while the folder's (device, inode, mtime, ctime) is unchanged. As in git's
"racy" rule, a listing taken within `RACY_NS` of the folder's last change is not trusted: on a filesystem
with coarse timestamps a second change in the same tick would leave the stamp as it was. Such a folder is
read again on every use until it has been quiet for that long. ctime is in the key because a process can
set mtime back (`touch -d`, `tar x`) but not ctime. Symlinks are kept by name only: what they point to can
change without their folder changing, so the caller resolves them on every use.
"""

from __future__ import annotations

import stat
import time
from dataclasses import dataclass
from os import fstat, lstat, scandir

RACY_NS = 2_000_000_000
"""A listing is trusted only when the folder's last change is at least this much older than the listing."""


@dataclass
class Listing:
    """One folder's entries. `.git` is a dot name like any other: listed or entered only for a pattern that
    spells a leading dot, as Python's glob in FrogNano's harness."""

    key: tuple[int, int, int, int]  # st_dev, st_ino, st_mtime_ns, st_ctime_ns when it was read
    trusted: bool
    dirs: list[str]  # real sub-folders; symlinks to folders are in `links`
    files: list[str]  # regular files whose names do not start with a dot
    hidden: list[str]  # regular files whose names start with a dot
    links: list[str]  # symlinks, whatever they point to


class Listings:
    """The listings of the folders a Workspace's Globs have read, checked against a stat on every use."""

    def __init__(self) -> None:
        self._by_path: dict[str, Listing] = {}

    def get(self, folder: str, fd: int | None = None) -> Listing | None:
        """The entries of `folder` (an absolute path, not a symlink), or None when it cannot be read. With
        `fd`, an open descriptor of that folder, the folder is read through it and never looked up by name
        (beneath.py: a confined Glob cannot be led out of the tree by a symlink swapped in meanwhile)."""
        now = time.time_ns()
        try:
            info = lstat(folder) if fd is None else fstat(fd)  # before reading: a later change shows next time
        except OSError:
            self._by_path.pop(folder, None)
            return None
        if not stat.S_ISDIR(info.st_mode):
            self._by_path.pop(folder, None)
            return None
        key = (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
        known = self._by_path.get(folder)
        if known is not None and known.trusted and known.key == key:
            return known
        trusted = now - max(info.st_mtime_ns, info.st_ctime_ns) >= RACY_NS
        listing = _read(folder if fd is None else fd, key, trusted=trusted)
        if listing is None:
            self._by_path.pop(folder, None)  # unreadable now; it is tried again next time
        else:
            self._by_path[folder] = listing
        return listing

    def __len__(self) -> int:
        return len(self._by_path)


def _read(folder: str | int, key: tuple[int, int, int, int], trusted: bool) -> Listing | None:
    dirs: list[str] = []
    files: list[str] = []
    hidden: list[str] = []
    links: list[str] = []
    try:
        entries = scandir(folder)
    except OSError:
        return None  # vanished or unreadable: skipped, as glob does
    with entries:
        for entry in entries:
            name = entry.name
            if entry.is_file(follow_symlinks=False):  # most entries are files: test that first
                (files if name[0] != "." else hidden).append(name)
            elif entry.is_dir(follow_symlinks=False):
                dirs.append(name)
            elif entry.is_symlink():
                links.append(name)
            # sockets, pipes and devices are never listed
    return Listing(key, trusted, dirs, files, hidden, links)
