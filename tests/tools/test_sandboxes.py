"""The one sandbox registry: both users (the agent, the eval) take their choices, their validation and their
option help from it."""

from __future__ import annotations

import re
import typing

import pytest

from leaf_cli.agent.sandbox import SANDBOXES, resolve_kind
from leaf_cli.cli.eval import SandboxOpt
from leaf_cli.cli.options import Sandbox
from leaf_cli.config import Settings
from leaf_cli.errors import LeafError
from leaf_cli.tasks.envs.backends import BACKENDS, make_sandbox
from leaf_cli.tools.sandboxes import AGENT, EVAL, KINDS, check, offered


def _help(option: object) -> str:
    return typing.get_args(option)[1].help


def test_each_kind_says_what_it_isolates_and_who_offers_it() -> None:
    assert len({k.name for k in KINDS}) == len(KINDS)
    assert all(k.isolates and k.users and k.users <= {AGENT, EVAL} for k in KINDS)
    assert offered(AGENT) == ("auto", "bwrap", "sandbox-exec", "none")
    assert offered(EVAL) == ("subprocess", "bwrap", "docker")


def test_both_users_choose_from_the_registry() -> None:
    assert SANDBOXES == offered(AGENT)
    assert tuple(BACKENDS) == offered(EVAL)
    assert typing.get_args(Settings.model_fields["sandbox"].annotation) == offered(AGENT)
    for option, user in ((Sandbox, AGENT), (SandboxOpt, EVAL)):  # the help names every choice, and only those
        named = set(re.findall(r"[a-z][a-z-]+", _help(option))) & {k.name for k in KINDS}
        assert named == set(offered(user)), (user, _help(option))


def test_an_unknown_name_lists_the_users_own_choices() -> None:
    with pytest.raises(LeafError, match=r"^unknown sandbox 'docker'; choose one of: auto, bwrap, sandbox-exec, none$"):
        resolve_kind("docker")
    with pytest.raises(LeafError, match=r"^unknown sandbox 'none'; choose one of: subprocess, bwrap, docker$"):
        make_sandbox("none")
    assert check("bwrap", AGENT) == check("bwrap", EVAL) == "bwrap"
