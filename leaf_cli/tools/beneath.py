"""Paths under the work tree, walked one component at a time from a descriptor of the tree, never by name.

A confined workspace (`leaf fix`, `leaf chat`) must not be led out of its tree by a symlink the agent swaps
in between a check and an open (renameat2 RENAME_EXCHANGE in a loop wins that race). So the tools never hand
the kernel a whole path: each folder is opened with O_NOFOLLOW relative to the descriptor of the one before
it, and a symlink met on the way is read (readlinkat) and its target walked by these same rules. An absolute
target counts only when it names a place under the root (it is then walked from the root's descriptor), and
`..` never climbs above the root. A swap after a component was opened changes nothing: the walk holds that
folder's descriptor, not its name. A symlink inside the tree that points inside it is followed, as FrogNano's
harness followed it; one that leads out is `OutsideWorkspaceError`.

What the walk returns is a `Place`: the descriptor of the last folder, the final name in it (a symlink there
is followed too, so the name is not one as far as the walk could see: the caller opens it with O_NOFOLLOW,
and a link swapped in afterwards fails with ELOOP instead of being followed), and the logical real path, for
messages and for the observation's name.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

MAX_LINKS = 40
"""Symlinks one walk may follow (the kernel's own limit): past it, ELOOP."""
_O_PATH = getattr(os, "O_PATH", 0)  # Linux: a folder handle that needs no read permission
_DIR_FLAGS = (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
LIST_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""A folder opened to be listed (scandir needs a readable descriptor)."""


class Escape(Exception):
    """The walk would leave the root (a `..` above it, or a symlink to a place outside)."""


@dataclass
class Place:
    """A name inside an open folder. `dir_fd` belongs to the Place: `close` it (or use it as a context).

    `dir_fd` None is a plain path (an unconfined workspace): `name` is then the whole path, and the `os`
    calls that take `dir_fd=` treat it as they treat any path."""

    dir_fd: int | None
    name: str
    """The final component ("" when the path is the folder itself, the root for `.`)."""
    real: str
    """The logical real path: the root, then the names walked (symlinks replaced by what they lead to)."""

    def close(self) -> None:
        if self.dir_fd is not None:
            os.close(self.dir_fd)
            self.dir_fd = None

    def __enter__(self) -> "Place":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def walk(root: str, parts: list[str], *, create_dirs: bool = False) -> Place:
    """Walk `parts` (components relative to `root`, which is a resolved absolute path) beneath `root`.

    Raises Escape when a step leaves the root, OSError as the kernel words it (its filename the real path of
    the component that failed) for a missing folder, a file in the middle of the path, a loop. With
    `create_dirs`, missing folders are made (as `Path.mkdir(parents=True, exist_ok=True)`: a file where a
    folder should be is FileExistsError).
    """
    prefix = root.rstrip("/")
    stack = [os.open(root, _DIR_FLAGS)]  # stack[i] is the folder of names[:i]
    names: list[str] = []
    pending = list(reversed([p for p in parts if p not in ("", ".")]))
    links = 0
    try:
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not names:
                    raise Escape(prefix)
                os.close(stack.pop())
                names.pop()
                continue
            here = prefix + "".join("/" + n for n in names) + "/" + part
            last = not pending
            target = _link_target(stack[-1], part, here)
            if target is not None:
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), here)
                if target.startswith("/"):
                    if target != prefix and not target.startswith(prefix + "/"):
                        raise Escape(target)
                    while names:  # an absolute target under the root: walked from the root's descriptor
                        os.close(stack.pop())
                        names.pop()
                    target = target[len(prefix):]
                pending.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))
                continue
            if last:
                pending.append(part)
                break
            stack.append(_open_dir(stack[-1], part, here, create_dirs))
            names.append(part)
        name = pending[-1] if pending else ""
        real = prefix + "".join("/" + n for n in names) + ("/" + name if name else "")
        fd = stack.pop()
        return Place(fd, name, real or "/")
    finally:
        for fd in stack:
            os.close(fd)


def _link_target(dir_fd: int, name: str, here: str) -> str | None:
    """What the symlink `name` in `dir_fd` points to, or None when it is not a symlink (or does not exist)."""
    try:
        info = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, here) from None
    if not stat.S_ISLNK(info.st_mode):
        return None
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOENT):  # swapped for a non-link since the lstat: look again
            return _link_target(dir_fd, name, here)
        raise OSError(exc.errno, exc.strerror, here) from None


def _open_dir(dir_fd: int, name: str, here: str, create: bool) -> int:
    """The descriptor of folder `name` in `dir_fd` (never through a symlink: one swapped in is ELOOP)."""
    for _ in range(MAX_LINKS):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), here) from None
            try:
                os.mkdir(name, dir_fd=dir_fd)
            except FileExistsError:
                pass  # made by someone else meanwhile: open it
        except NotADirectoryError:
            if create:  # pathlib's mkdir(parents=True, exist_ok=True) words a file in the way so
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), here) from None
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), here) from None
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, here) from None
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), here)


def open_dir_at(place: Place) -> int:
    """A listable descriptor of the folder `place` names (the place's folder itself when its name is "")."""
    return os.open(place.name or ".", LIST_FLAGS, dir_fd=place.dir_fd)


def open_file_flags(place: Place, flags: int) -> int:
    """`flags` for opening `place.name`: O_NOFOLLOW beneath a root (the walk already followed what may be
    followed; a link swapped in since is ELOOP), as given for a plain path."""
    return flags | (os.O_NOFOLLOW if place.dir_fd is not None else 0)
