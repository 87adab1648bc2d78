"""Text files as Edit and Write see them: encoding, BOM and line endings detected, kept, and written atomically."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from leaf_cli.tools import texts
from leaf_cli.tools.workspace import Target

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


def open_regular(target: Target) -> tuple[int, int]:
    """A descriptor open on the file and its size; the OS error, naming the path as given, when it cannot be
    read. A folder is EISDIR as Python's `open` says it. Pipes, sockets and devices are refused: reading
    them hangs or never ends (the harness hung there), so this is leaf's error in the harness's form."""
    try:
        fd = os.open(target.real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
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


def load_target(target: Target) -> TextFile:
    """The text file at `target` for Edit: the OS error when it cannot be read, leaf's when it is binary."""
    fd, _ = open_regular(target)
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
    """Write `data` to a temp file beside `path` and rename it over `path`.

    A crash or a full disk leaves either the old file or the new one, never half of each. An existing file
    keeps its permission bits; a new one gets the usual 0666 & ~umask (mkstemp would make it 0600). A symlink
    is written through, as `open(path, "w")` writes through it: its target changes, the link stays.
    """
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_current_umask()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".leaf-tmp", dir=path.parent)
    except OSError as exc:  # name the file, as `open(path, "w")` does (a read-only folder): not a random temp name
        raise type(exc)(exc.errno, exc.strerror, str(path)) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
