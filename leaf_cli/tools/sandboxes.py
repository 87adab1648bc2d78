"""Which sandboxes exist: each kind's name, what it isolates and which user offers it.

Two users pick from this one list. The agent (`leaf fix`, `leaf chat`: agent/sandbox.py) runs the model's
commands on the user's machine; the eval (`leaf eval`, TaskPilot, RL: tasks/envs/backends.py) runs attempts
and graders on tasks. Their option values, the choices an unknown name lists, and the settings' allowed values
all come from `offered`, in the order below.
"""

from __future__ import annotations

from dataclasses import dataclass

from leaf_cli.errors import LeafError

AGENT, EVAL = "agent", "eval"
"""The two users: the agent on the user's own work tree, the eval on tasks."""


@dataclass(frozen=True)
class SandboxKind:
    name: str
    isolates: str
    users: frozenset[str]


KINDS: tuple[SandboxKind, ...] = (
    SandboxKind("auto", "this platform's sandbox: bwrap on Linux, sandbox-exec on macOS, none elsewhere",
                frozenset({AGENT})),
    SandboxKind("subprocess", "nothing but a scrubbed environment (trusted code only: no network isolation)",
                frozenset({EVAL})),
    SandboxKind("bwrap", "bubblewrap: read-only root, writable work tree, no network, its own pid namespace, "
                         "dies with leaf", frozenset({AGENT, EVAL})),
    SandboxKind("sandbox-exec", "macOS Seatbelt: writes only in the work tree and a private /tmp, no network",
                frozenset({AGENT})),
    SandboxKind("none", "nothing: plain subprocesses in the run's cgroup, after a warning", frozenset({AGENT})),
    SandboxKind("docker", "the task's image: network none, the workspace bind-mounted", frozenset({EVAL})),
)


def offered(user: str) -> tuple[str, ...]:
    """The sandbox names `user` (AGENT or EVAL) offers, in the registry's order."""
    return tuple(kind.name for kind in KINDS if user in kind.users)


def check(name: str, user: str) -> str:
    """`name` when `user` offers it; else LeafError listing the valid ones."""
    choices = offered(user)
    if name not in choices:
        raise LeafError(f"unknown sandbox {name!r}; choose one of: {', '.join(choices)}")
    return name
