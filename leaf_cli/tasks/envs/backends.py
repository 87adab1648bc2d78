"""The sandbox registry: a backend by its short name. It sits above every backend module so that none of
them needs to import another (`docker.py` builds on `sandbox.HostPathSandbox`; nothing imports back)."""

from __future__ import annotations

import shutil

from leaf_cli.tasks.envs.docker import DockerSandbox
from leaf_cli.tasks.envs.sandbox import BwrapSandbox, Sandbox, SubprocessSandbox
from leaf_cli.tools.sandboxes import EVAL, check, offered

_CLASSES: dict[str, type] = {"subprocess": SubprocessSandbox, "bwrap": BwrapSandbox, "docker": DockerSandbox}
BACKENDS: dict[str, type] = {name: _CLASSES[name] for name in offered(EVAL)}
"""The eval's sandboxes, as the one registry (tools/sandboxes.py) names them; a kind without a class fails here."""


def make_sandbox(name: str | None) -> Sandbox:
    """The sandbox called `name`, checked it can run here; None picks bwrap where bubblewrap is installed,
    else subprocess. An unknown name lists the valid ones."""
    if name is None:
        name = "bwrap" if shutil.which("bwrap") else "subprocess"
    sandbox = BACKENDS[check(name, EVAL)]()
    sandbox.prepare()
    return sandbox
