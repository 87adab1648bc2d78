"""What the host-socket tests of the bwrap sandbox share: a probe script that tries each unix socket named on
its command line (a path, or an abstract name `@…`) and prints `reached NAME` or `refused NAME ERRNO`, the
work folder that holds it, the environment its sandbox runs with, and fresh folders on host paths."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Iterator

import pytest

PROBE = """
import socket, sys
for name in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(3)
    try:
        s.connect(name.replace("@", "\\0", 1) if name.startswith("@") else name)
        s.sendall(b"hello from inside")
        print("reached", name)
    except OSError as exc:
        print("refused", name, exc.errno)
"""


def probe_folder(tmp_path: Path) -> Path:
    """`tmp_path/work` with `probe.py` in it: the repository the sandbox runs in."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "probe.py").write_text(PROBE)
    return folder


def env_for(work: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(work), "LANG": "C.UTF-8"}


def host_folder(parent: Path) -> Iterator[Path]:
    """A fresh folder under `parent` (a host path outside /tmp), removed afterwards; skip where not writable."""
    folder = parent / f"leaf-test-{uuid.uuid4().hex[:8]}"
    try:
        folder.mkdir()
    except OSError:
        pytest.skip(f"cannot make a folder under {parent} here")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
