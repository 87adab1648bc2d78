"""The macOS Seatbelt (`sandbox-exec`) profile leaf runs the agent's commands under.

The same rules as the bubblewrap sandbox where Seatbelt can express them: reads everywhere except the home
(of which only the toolchain folders of agent/sandbox_home.py's allowlist and the writable folders are
readable) and the hidden paths, writes only to the writable folders and the private temp folder, `.git`
config and hooks read-only, no network unless asked. Seatbelt cannot mount: the home is the real one, with
reads denied, not a private writable copy, so a write under the home fails there (and a version manager's
rehash at login with it). Seatbelt has no pid namespace: the reaper finds survivors there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


def _quote(path: Path) -> str:
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def seatbelt_profile(*, writable: Sequence[Path], tmp_dir: Path, protect: Sequence[Path] = (),
                     hidden: Sequence[Path] = (), network: bool = False, home: Path | None = None,
                     home_readable: Sequence[Path] = ()) -> str:
    """A Seatbelt profile (SBPL); later rules win over earlier ones."""
    lines = ["(version 1)", "(allow default)", "(deny file-write*)",
             '(allow file-write* (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/"))']
    if home is not None:
        lines.append(f"(deny file-read* (subpath {_quote(home)}))")
        # the folders leading to a readable one can be looked up (stat), not listed
        lines += [f"(allow file-read-metadata (literal {_quote(p)}))" for p in _between(home, [*home_readable, *writable])]
        lines += [f"(allow file-read* (subpath {_quote(p)}))" for p in home_readable]
        lines += [f"(allow file-read* (subpath {_quote(p)}))" for p in writable if p.is_relative_to(home)]
    lines += [f"(allow file-write* (subpath {_quote(p)}))" for p in [*writable, tmp_dir]]
    lines += [f"(deny file-write* (subpath {_quote(p)}))" for p in protect]
    lines += [f"(deny file-read* file-write* (subpath {_quote(p)}))" for p in hidden]
    if not network:
        lines.append('(deny network* (remote ip))')
    return "\n".join(lines) + "\n"


def _between(home: Path, paths: Sequence[Path]) -> list[Path]:
    """The home and every folder between it and each of `paths` under it."""
    found: list[Path] = []
    for path in paths:
        for parent in reversed(path.parents):
            if parent.is_relative_to(home) and parent not in found:
                found.append(parent)
    return found


def seatbelt_argv(exe: str, profile: str) -> list[str]:
    return [exe, "-p", profile]
