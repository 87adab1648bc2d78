"""Secrets out of the agent's reach: the environment its commands get, which values are credentials, and
the redaction of those values from anything leaf writes (trajectory, patch, JSON output).

The agent's environment is an allowlist (agent_env.py): ordinary and toolchain variables whose value is not
a credential, plus each variable `--pass-env NAME` names. Everything else is kept from it.

A value is a credential by its variable's name (`*_TOKEN`, `*_KEY`, `*_SECRET`, `*_PASSWORD`,
`*_CREDENTIALS`, `AWS_*`, `PGPASSWORD`, ...) or by its own shape: a URL with a password or with a token in
its path or query (a webhook), a string of 20 or more token characters mixing upper case, lower case and
digits, or one of the well-known token prefixes (`ghp_`, `github_pat_`, `xoxb-`, `sk-`, `AKIA`, ...). A path
is never a credential, whatever its variable is called (`AWS_CA_BUNDLE=/etc/ssl/ca.pem`, `LEAF_HOME`): it
names a file, and the file is what the sandbox hides.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable, Mapping

from leaf_cli.agent.agent_env import allowed

SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "API_KEY", "PRIVATE_KEY",
                "ACCESS_KEY", "AUTH")
SECRET_SUFFIXES = ("_KEY", "_PASS", "_PWD", "_DSN", "_COOKIE", "_SESSION")
SECRET_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_APPLICATION_CREDENTIALS", "VAULT_", "OP_SESSION")
LEAF_PREFIX = "LEAF_"
"""leaf's own variables: kept from the agent (they name its state folder), redacted only when a credential."""
SECRET_NAMES = frozenset({"PGPASSWORD", "MYSQL_PWD", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "KRB5CCNAME",
                          "DOCKER_AUTH_CONFIG", "NETRC", "GIT_ASKPASS", "SSH_ASKPASS"})
_URL_WITH_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@", re.I)
_SAFE_NAMES = frozenset({"PWD", "OLDPWD", "XAUTHORITY", "DESKTOP_SESSION"})
_MIN_REDACT = 6
"""Values shorter than this are never redacted: they occur in ordinary text by chance, and replacing them
would shred it (a `PGPASSWORD=abc` would turn every "abc" of a trajectory into a marker)."""


def is_secret(name: str, value: str) -> bool:
    """Kept from the agent's environment: a credential, or one of leaf's own `LEAF_*` variables."""
    return name.upper().startswith(LEAF_PREFIX) or is_credential(name, value)


def is_credential(name: str, value: str) -> bool:
    """A secret by its name or by its value's shape, never a path: its value is redacted from leaf's records."""
    upper = name.upper()
    if upper in _SAFE_NAMES or looks_like_path(value):
        return False
    return (upper in SECRET_NAMES or upper.startswith(SECRET_PREFIXES) or upper.endswith(SECRET_SUFFIXES)
            or any(word in upper for word in SECRET_WORDS) or value_is_credential(value))


_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.~]{20,}")
_TOKEN_PREFIX = re.compile(r"(ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abposr]-|sk-|sk_live_|rk_live_|"
                           r"AKIA|ASIA|hf_|npm_|pypi-|dop_v1_|SG\.)[A-Za-z0-9_\-.]{8,}")


def value_is_credential(value: str) -> bool:
    """A token by its shape alone: what a `GITHUB_PAT` or a `SLACK_WEBHOOK_URL` holds, whatever its name."""
    value = value.strip()
    if _URL_WITH_PASSWORD.search(value):
        return True
    if "://" in value:
        from urllib.parse import parse_qsl, urlsplit

        try:
            url = urlsplit(value)
        except ValueError:
            return False
        parts = [p for p in url.path.split("/") if p] + [v for _k, v in parse_qsl(url.query)]
        return any(_token_shaped(part) for part in parts)
    return _token_shaped(value)


def _token_shaped(text: str) -> bool:
    """A known token prefix, or 20+ token characters with upper case, lower case and digits all present (a
    random base-62 token of that length almost always has all three; a word, a version, `x86_64-linux-gnu`
    or a hex hash does not)."""
    if _TOKEN_PREFIX.fullmatch(text):
        return True
    return (bool(_TOKEN.fullmatch(text)) and any(c.isupper() for c in text) and any(c.islower() for c in text)
            and any(c.isdigit() for c in text))


def looks_like_path(value: str) -> bool:
    """An absolute or home-relative path, a list of them (`PATH`-like), or a `file:` URL."""
    parts = [p for p in value.split(os.pathsep) if p]
    return bool(parts) and (value.startswith("file:") or all(p.startswith(("/", "~/", "./", "../")) for p in parts))


def scrub_env(environ: Mapping[str, str], pass_env: Iterable[str] = ()) -> dict[str, str]:
    """The environment the agent's commands get: leaf's variables on the allowlist (agent_env.py) whose value is
    not a credential, plus every variable `pass_env` names."""
    keep = {name.upper() for name in pass_env}
    return {k: v for k, v in environ.items() if k.upper() in keep or (allowed(k) and not is_secret(k, v))}


class Redactor:
    """Replaces the value of every credential of leaf's environment with `[secret NAME]` in text.

    The one redaction of leaf's records: the trajectory files (every line, through `trajectory.json_line`),
    the JSON output of `leaf fix`, the observations `leaf replay` prints. It covers every variable kept from
    the agent whose value is a credential (`is_credential`: by name or by shape, never a path), so leaf's own
    `LEAF_HOME` and an `AWS_CA_BUNDLE` path stay as they are, in the recorded patch too. A variable let in by
    `--pass-env` is the user's explicit choice and stays unredacted (the record shows what the agent saw).
    Values shorter than `_MIN_REDACT` (6) characters are not redacted. The user's files are never touched:
    only leaf's records are redacted.
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
