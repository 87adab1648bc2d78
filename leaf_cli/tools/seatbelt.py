"""The macOS Seatbelt (`sandbox-exec`) profile leaf runs the agent's commands under.

The same rules as the bubblewrap sandbox where Seatbelt can express them: reads everywhere except the
hidden paths, writes only to the writable folders and the private temp folder, `.git` config and hooks
read-only, no network unless asked. Seatbelt has no pid namespace: the reaper finds survivors there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


def _quote(path: Path) -> str:
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def seatbelt_profile(*, writable: Sequence[Path], tmp_dir: Path, protect: Sequence[Path] = (),
                     hidden: Sequence[Path] = (), network: bool = False) -> str:
    """A Seatbelt profile (SBPL); later rules win over earlier ones."""
    lines = ["(version 1)", "(allow default)", "(deny file-write*)",
             '(allow file-write* (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/"))']
    lines += [f"(allow file-write* (subpath {_quote(p)}))" for p in [*writable, tmp_dir]]
    lines += [f"(deny file-write* (subpath {_quote(p)}))" for p in protect]
    lines += [f"(deny file-read* file-write* (subpath {_quote(p)}))" for p in hidden]
    if not network:
        lines.append('(deny network* (remote ip))')
    return "\n".join(lines) + "\n"


def seatbelt_argv(exe: str, profile: str) -> list[str]:
    return [exe, "-p", profile]
