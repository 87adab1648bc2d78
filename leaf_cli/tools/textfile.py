"""Text files as Edit and Write see them: encoding, BOM and line endings detected, kept, and written atomically."""

from __future__ import annotations

import errno
import os
import secrets
import stat
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from leaf_cli.tools import texts
from leaf_cli.tools.beneath import Place, open_file_flags
from leaf_cli.tools.workspace import OutsideWorkspaceError, Target

if TYPE_CHECKING:
    from leaf_cli.tools.workspace import Workspace

SNIFF_BYTES = 8192
BOM = b"\xef\xbb\xbf"


class BinaryFileError(ValueError):
    """The file holds NUL bytes near its start: it is not text, and the text tools leave it alone."""


def looks_binary(head: bytes) -> bool:
    """True when the first bytes of a file hold a NUL byte (the heuristic git and grep use)."""
    return b"\0" in head[:SNIFF_BYTES]


@dataclass
class TextFile:
    """A decoded file plus what is needed to write it back in the same form."""

    text: str
    encoding: str = "utf-8"  # "utf-8", or "latin-1" for files that are not valid UTF-8
    bom: bool = False
    newline: str | None = None  # the dominant line ending, "\n" or "\r\n"; None when the file has none

    def encode(self, text: str) -> bytes:
        """`text` in this file's encoding (raises UnicodeEncodeError when latin-1 cannot hold it)."""
        return (BOM if self.bom else b"") + text.encode(self.encoding)

    def with_newlines(self, text: str) -> str:
        """`text` with this file's line endings (the model writes LF; a CRLF file stays CRLF)."""
        return convert_newlines(text, self.newline)


def convert_newlines(text: str, ending: str | None) -> str:
    """`text` with every `\n` / `\r\n` made `ending`; unchanged when `ending` is None."""
    if ending is None:
        return text
    text = text.replace("\r\n", "\n")
    return text.replace("\n", "\r\n") if ending == "\r\n" else text


def dominant_newline(text: str) -> str | None:
    """The line ending most lines use (CRLF wins ties), or None for text without line breaks."""
    lf = text.count("\n")
    if not lf:
        return None
    return "\r\n" if text.count("\r\n") * 2 >= lf else "\n"


def decode(data: bytes, shown: str) -> TextFile:
    """Decode file bytes: UTF-8 (with or without BOM), else latin-1, which maps every byte and round-trips."""
    if looks_binary(data):
        raise BinaryFileError(texts.BINARY_FILE.format(shown=shown))
    bom = data.startswith(BOM)
    body = data[len(BOM):] if bom else data
    try:
        text, encoding = body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text, encoding = body.decode("latin-1"), "latin-1"
    return TextFile(text=text, encoding=encoding, bom=bom, newline=dominant_newline(text))


def open_regular(target: Target, workspace: "Workspace") -> tuple[int, int]:
    """A descriptor open on the file and its size; the OS error, naming the path as given, when it cannot be
    read. A folder is EISDIR as Python's `open` says it. Pipes, sockets and devices are refused: reading
    them hangs or never ends (the harness hung there), so this is leaf's error in the harness's form.
    The file is opened where `workspace.place` leads (beneath the root, never through a swapped symlink)."""
    try:
        with workspace.place(target) as place:
            flags = open_file_flags(place, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            fd = os.open(place.name or ".", flags, dir_fd=place.dir_fd)
    except OutsideWorkspaceError:
        raise
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, str(target.given)) from None
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode):
        return fd, info.st_size
    os.close(fd)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target.given))
    raise OSError(errno.EINVAL, texts.NOT_REGULAR, str(target.given))


@contextmanager
def os_error(target: Target) -> Iterator[None]:
    """OS errors raised on `target.real` name `target.given`, the path as FrogNano's harness named it."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None or str(exc.filename) != str(target.real):
            raise
        raise type(exc)(exc.errno, exc.strerror, str(target.given)) from None


def load_target(target: Target, workspace: "Workspace") -> TextFile:
    """The text file at `target` for Edit: the OS error when it cannot be read, leaf's when it is binary."""
    fd, _ = open_regular(target, workspace)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    return decode(data, target.shown)


def load(path: Path, shown: str) -> TextFile:
    """The text file at `path`, or a clear error when it is missing, a folder, or binary."""
    if path.is_dir():
        raise IsADirectoryError(f"{shown} is a directory, not a file; use Glob to list its files")
    if not path.exists():
        raise FileNotFoundError(f"{shown} does not exist; use Write to create a new file, or Glob to find the right path")
    require_regular(path, shown)
    return decode(path.read_bytes(), shown)


def require_regular(path: Path, shown: str) -> None:
    """Refuse pipes, sockets and devices, which the text tools cannot read without blocking or flooding."""
    if not stat.S_ISREG(path.stat().st_mode):
        raise ValueError(f"{shown} is not a regular file (a pipe, socket or device); the text tools handle files only")


_umask_lock = threading.Lock()
_umask: int | None = None


def _current_umask() -> int:
    """The process umask (read once: setting it to read it is not thread-safe, so it is done under a lock)."""
    global _umask
    with _umask_lock:
        if _umask is None:
            _umask = os.umask(0)
            os.umask(_umask)
        return _umask


def atomic_write(path: Path, data: bytes) -> None:
    """`write_place` for a plain path (r2e's editor)."""
    write_place(Place(None, str(path), str(path)), data)


def write_place(place: Place, data: bytes) -> None:
    """Write `data` to a temp file beside `place` and rename it over `place`.

    A crash or a full disk leaves either the old file or the new one, never half of each. An existing file
    keeps its permission bits; a new one gets the usual 0666 & ~umask. A symlink at a plain path is written
    through, as `open(path, "w")` writes through it: its target changes, the link stays (beneath a root the
    walk has followed it already, and the rename never follows one).
    """
    dir_fd, name = place.dir_fd, place.name
    if dir_fd is None and os.path.islink(name):
        name = os.path.realpath(name)
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_current_umask()
    fd, tmp = _temp_beside(dir_fd, name, place.real if dir_fd is not None else name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), mode)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise


def _temp_beside(dir_fd: int | None, name: str, label: str) -> tuple[int, str]:
    """A new file `.NAME.XXXXXXXX.leaf-tmp` in the folder of `name`, mode 0600, never through a symlink. An
    error names the file being written, as `open(path, "w")` does (a read-only folder), not the temp name."""
    folder, base = os.path.split(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        tmp = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.leaf-tmp")
        try:
            return os.open(tmp, flags, 0o600, dir_fd=dir_fd), tmp
        except FileExistsError:
            continue
        except OSError as exc:
            raise type(exc)(exc.errno, exc.strerror, label) from None
    raise FileExistsError(errno.EEXIST, "no free temporary file name", label)
