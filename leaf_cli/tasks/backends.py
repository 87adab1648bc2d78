"""The sandbox registry: a backend by its short name. It sits above every backend module so that none of
them needs to import another (`docker.py` builds on `sandbox.HostPathSandbox`; nothing imports back)."""

from __future__ import annotations

import shutil

from leaf_cli.errors import LeafError
from leaf_cli.tasks.docker import DockerSandbox
from leaf_cli.tasks.sandbox import BwrapSandbox, Sandbox, SubprocessSandbox

BACKENDS: dict[str, type] = {"subprocess": SubprocessSandbox, "bwrap": BwrapSandbox, "docker": DockerSandbox}


def make_sandbox(name: str | None) -> Sandbox:
    """The sandbox called `name`, checked it can run here; None picks bwrap where bubblewrap is installed,
    else subprocess. An unknown name lists the valid ones."""
    if name is None:
        name = "bwrap" if shutil.which("bwrap") else "subprocess"
    if name not in BACKENDS:
        raise LeafError(f"unknown sandbox {name!r}; choose one of: {', '.join(BACKENDS)}")
    sandbox = BACKENDS[name]()
    sandbox.prepare()
    return sandbox
