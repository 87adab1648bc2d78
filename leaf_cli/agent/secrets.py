"""Secrets out of the agent's reach: which variables are secrets, the environment its commands get, and
the redaction of secret values from anything leaf writes (trajectory, patch, JSON output).

A variable is a secret by its name (`*_TOKEN`, `*_KEY`, `*_SECRET`, `*_PASSWORD`, `*_CREDENTIALS`, `AWS_*`,
`PGPASSWORD`, ...) or by its value (a URL with a password in it, as `DATABASE_URL` often is). leaf's own
`LEAF_*` variables name its state folder and keys, so they never reach the agent either. `--pass-env NAME`
lets one named variable through.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "API_KEY", "PRIVATE_KEY",
                "ACCESS_KEY", "AUTH")
SECRET_SUFFIXES = ("_KEY", "_PASS", "_PWD", "_DSN", "_COOKIE", "_SESSION")
SECRET_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_APPLICATION_CREDENTIALS", "VAULT_", "OP_SESSION")
LEAF_PREFIX = "LEAF_"
"""leaf's own variables: kept from the agent (they name its state folder), redacted only when a credential."""
SECRET_NAMES = frozenset({"PGPASSWORD", "MYSQL_PWD", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "KRB5CCNAME",
                          "DOCKER_AUTH_CONFIG", "NETRC", "GIT_ASKPASS", "SSH_ASKPASS"})
_URL_WITH_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@", re.I)
_SAFE_NAMES = frozenset({"PWD", "OLDPWD", "XAUTHORITY"})
_MIN_REDACT = 6
"""Values shorter than this are never redacted: they occur in ordinary text by chance, and replacing them
would shred it (a `PGPASSWORD=abc` would turn every "abc" of a trajectory into a marker)."""


def is_secret(name: str, value: str) -> bool:
    """Kept from the agent's environment: a credential, or one of leaf's own `LEAF_*` variables."""
    return name.upper().startswith(LEAF_PREFIX) or is_credential(name, value)


def is_credential(name: str, value: str) -> bool:
    """A secret by its name or by its value (a URL with a password): its value is redacted from leaf's records."""
    upper = name.upper()
    if upper in _SAFE_NAMES:
        return False
    return (upper in SECRET_NAMES or upper.startswith(SECRET_PREFIXES) or upper.endswith(SECRET_SUFFIXES)
            or any(word in upper for word in SECRET_WORDS) or bool(_URL_WITH_PASSWORD.search(value)))


def scrub_env(environ: Mapping[str, str], pass_env: Iterable[str] = ()) -> dict[str, str]:
    """The environment the agent's commands get: leaf's own minus every secret, unless passed by name."""
    keep = {name.upper() for name in pass_env}
    return {k: v for k, v in environ.items() if k.upper() in keep or not is_secret(k, v)}


class Redactor:
    """Replaces the value of every secret variable of leaf's environment with `[secret NAME]` in text.

    The one redaction of leaf's records: the trajectory files (every line, through `trajectory.json_line`),
    the JSON output of `leaf fix`, the observations `leaf replay` prints. The secrets are the credentials
    `scrub_env` keeps from the agent (leaf's own `LEAF_HOME`, `LEAF_MODEL`, ... are paths and names, not
    credentials: kept from the agent, not redacted; `LEAF_API_KEY` is a credential). A variable let in by
    `--pass-env` is the user's explicit choice and stays unredacted (the record shows what the agent saw). Values shorter than `_MIN_REDACT` (6)
    characters are not redacted. The user's files are never touched: only leaf's records are redacted.
    """

    def __init__(self, environ: Mapping[str, str], pass_env: Iterable[str] = ()) -> None:
        keep = {name.upper() for name in pass_env}
        pairs = [(v, k) for k, v in environ.items()
                 if k.upper() not in keep and is_credential(k, v) and len(v) >= _MIN_REDACT]
        self.pairs = sorted(pairs, key=lambda p: -len(p[0]))  # longest first: a value inside another

    def text(self, text: str) -> str:
        for value, name in self.pairs:
            if value in text:
                text = text.replace(value, f"[secret {name}]")
        return text

    def touches(self, value: Any) -> bool:
        """Whether any string inside a JSON-like value holds a secret value."""
        return self.obj(value) != value

    def obj(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.obj(v) for v in value]
        if isinstance(value, dict):
            return {k: self.obj(v) for k, v in value.items()}
        return value
