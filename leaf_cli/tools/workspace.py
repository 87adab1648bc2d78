"""The folder the tools work in, and the rules that keep them inside it."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from leaf_cli.tools import texts
from leaf_cli.tools.beneath import Escape, Place, walk
from leaf_cli.tools.jobs import Jobs
from leaf_cli.tools.listing import Listings


class FileHost(Protocol):
    """What runs the file tools in another process (`host.ToolHost`). Named here as a protocol, not imported,
    because host.py imports this module: the two would form an import circle, even a type-only one."""

    def call(self, name: str, arguments: dict[str, Any]) -> Any:  # a ToolResult (base.py imports this module too)
        ...

    def close(self) -> None:
        ...

_O_PATH = getattr(os, "O_PATH", None)  # Linux: a handle on a path that opens nothing (no device side effects)
_proc = {"works": _O_PATH is not None}  # set False once /proc/self/fd turns out to be missing (no /proc mounted)


class OutsideWorkspaceError(PermissionError):
    """A path resolves outside the workdir (through `..`, an absolute path or a symlink).

    The model sees it as `PermissionError: …` (registry.py): the permission layer's word, not a new kind.
    """


class Target(NamedTuple):
    """A path argument as the tools use it.

    `given` is the path as FrogNano's harness formed it (`~` expanded, joined to the workdir when relative,
    never resolved): OS error messages name it, as the model saw them in training. `real` is where the I/O
    happens: `given` itself when the workspace is not confined, else the resolved path that was checked.
    `shown` is the observation's name for it: relative to the workdir when it resolves inside, else `given`.
    `value` is the argument as the model wrote it (refusals quote it).

    In a confined workspace `real` is only the check's answer, which a swapped symlink can make stale: the
    I/O goes through `Workspace.place`, which walks the path again beneath the root (beneath.py).
    """

    given: Path
    real: Path
    shown: str
    value: str = ""


@dataclass
class Workspace:
    """The workdir plus how Bash runs there.

    `env` is the environment Bash commands get (None: leaf's own, scrubbed by the caller if it wants);
    `bash_prefix` wraps each command (for example a bubblewrap argv) and is empty for a plain subprocess.
    `listings` holds the folder listings Glob reuses for the rest of the episode (checked on every use).
    `jobs` holds the process groups Bash started: they keep running across calls (a server started in one
    call answers the next) and `end_episode` kills them all.
    """

    root: Path
    env: dict[str, str] | None = None
    bash_prefix: list[str] = field(default_factory=list)
    bash_default_timeout: float = 120.0
    bash_max_timeout: float | None = None
    """A ceiling on any Bash timeout (None: none, as in FrogNano's harness, where the model's value holds)."""
    confined: bool = True
    """The path policy. True (`leaf fix`, `leaf chat`): a path that resolves outside the root is refused with
    `PermissionError: …` and the permission layer decides the rest. False (`leaf eval`, TaskPilot, RL, where
    the sandbox is the boundary): any path is used as FrogNano's harness used it."""
    file_host: FileHost | None = field(default=None, repr=False, compare=False)
    """Where Read, Write, Edit and Glob run when not in this process: a process inside the sandbox Bash runs
    in (host.py), so an unconfined workspace's paths are the sandbox's, never the host's. None: here."""
    listings: Listings = field(default_factory=Listings, init=False, repr=False, compare=False)
    jobs: Jobs = field(default_factory=Jobs, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        # String forms: the path checks below run for every Read, and pathlib's parsing cost more than the I/O.
        self._root_text = str(self.root)
        self._prefix = self._root_text.rstrip("/") + "/"

    def target(self, value: object) -> Target:
        """The Target for a path argument (any JSON value: FrogNano's harness took `str(value)`)."""
        text = str(value)
        if text.startswith("~"):
            text = str(Path(text).expanduser())  # pathlib's rule: `~nosuchuser` is a RuntimeError, as there
        given = Path(text if text.startswith("/") else self._prefix + text)  # normalised as pathlib joins
        if not self.confined:
            return Target(given, given, self.shown(given), str(value))
        try:
            real = self.resolve(str(given))
        except OutsideWorkspaceError:
            raise OutsideWorkspaceError(texts.OUTSIDE.format(path=value, root=self.root)) from None
        return Target(given, real, self.display(real), str(value))  # `real` is resolved already: no second lookup

    def place(self, target: Target, *, create_dirs: bool = False, write: bool = False) -> Place:
        """Where the I/O for `target` happens (the caller closes it).

        Unconfined: the path itself, for the kernel to follow as FrogNano's harness let it (the sandbox is the
        boundary); `create_dirs` makes its parent folders as `Path.mkdir(parents=True)`. Confined: the folder
        reached by walking `target.real` beneath the root without following a symlink out of it, the protection
        for `--sandbox none` and a second line inside the sandbox. A `write` into any `.git` is refused there:
        a path the check saw as `src/x` may lead into `.git` by the time it is written.
        """
        if not self.confined:
            if create_dirs:
                target.real.parent.mkdir(parents=True, exist_ok=True)
            return Place(None, str(target.real), str(target.real))
        real = str(target.real)
        rel = real[len(self._prefix):] if real != self._root_text else ""
        if write and ".git" in rel.split("/"):
            raise OutsideWorkspaceError(texts.GIT_WRITE.format(path=target.value))
        try:
            place = walk(self._root_text, rel.split("/"), create_dirs=create_dirs)
        except Escape:
            raise OutsideWorkspaceError(texts.OUTSIDE.format(path=target.value, root=self.root)) from None
        if write and ".git" in place.real[len(self._prefix):].split("/"):
            place.close()
            raise OutsideWorkspaceError(texts.GIT_WRITE.format(path=target.value))
        return place

    def shown(self, given: Path) -> str:
        """FrogNano's display rule: the resolved path relative to the workdir when inside it, else as given."""
        text = str(given)
        real = self._kernel_path(text) or os.path.realpath(text)
        if real == self._root_text:
            return "."
        return real[len(self._prefix):] if real.startswith(self._prefix) else text

    def end_episode(self) -> None:
        """Kill every process the episode's Bash calls left running (the episode-end hook; jobs.py), and end
        the file tools' sandbox process."""
        try:
            self.jobs.close()
        finally:
            if self.file_host is not None:
                self.file_host.close()

    def resolve(self, path: str) -> Path:
        """The real path for `path` (relative to the root, or absolute), refused when it leaves the root."""
        if not path or not path.strip():
            raise ValueError("file_path is empty")
        text = os.path.expanduser(path)
        candidate = text if text.startswith("/") else self._prefix + text
        if "//" in candidate or "/./" in candidate or candidate.endswith(("/", "/.")):
            candidate = str(Path(candidate))  # rare spellings: pathlib normalises them, as it always did
        real = self._kernel_path(candidate) or self._plain_inside(candidate) or os.path.realpath(candidate)
        if real != self._root_text and not real.startswith(self._prefix):
            raise OutsideWorkspaceError(texts.OUTSIDE.format(path=path, root=self.root))
        return Path(real)

    def _kernel_path(self, path: str) -> str | None:
        """The real path of an existing `path` under the root, as the kernel resolved it, else None.

        Three syscalls whatever the depth (an O_PATH open, a readlink of its /proc fd, a close), where the
        lstat walk below needs one per component. O_PATH opens nothing, so a device is never touched.
        """
        if not _proc["works"] or ".." in path:  # `..` stays with realpath, which the refusals were written for
            return None
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except OSError:
            return None  # missing, a loop, no permission: the slower paths decide, as before
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            _proc["works"] = False
            return None
        finally:
            os.close(fd)
        if not real.startswith(self._prefix) or real.endswith(" (deleted)"):
            return None  # outside (the slow path words the refusal), or removed while we looked
        return real

    def _plain_inside(self, path: str) -> str | None:
        """`path` itself when it lies under the root with no `.`, `..` or symlink below the root, else None.

        The root is already resolved, so only the components below it need an lstat; realpath would lstat
        every component from `/` on each call. Used for paths that do not exist yet (files Write creates).
        """
        prefix = self._prefix
        if not path.startswith(prefix):
            return None
        parts = path[len(prefix):].split("/")
        if any(p in ("", ".", "..") for p in parts):
            return None
        current = prefix[:-1]
        for part in parts:
            current += "/" + part
            try:
                if stat.S_ISLNK(os.lstat(current).st_mode):
                    return None
            except FileNotFoundError:
                break  # nothing below a missing component exists, so nothing below it is a symlink
            except NotADirectoryError:
                return None
        return path

    def display(self, path: Path) -> str:
        """How a path is shown to the model: relative to the workdir when inside it."""
        text = str(path)
        if text == self._root_text:
            return "."
        return text[len(self._prefix):] if text.startswith(self._prefix) else text
