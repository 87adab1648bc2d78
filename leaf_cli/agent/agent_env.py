"""Which of leaf's environment variables the agent's commands may inherit: an allowlist, not a denylist.

The agent's environment starts empty and takes from leaf's only the ordinary variables a shell and a
toolchain need (Codex CLI's `shell_environment_policy` starts the same way with `inherit = "core"`: PATH,
SHELL, TMPDIR, HOME, LANG, LC_*, LOGNAME, USER). leaf's list is longer, because a coding agent runs the
project's own tests: it adds the terminal, proxies and certificate bundles, and each language toolchain's
own variables (where the interpreter, the virtual environment and the package folders are). Every other
variable, whatever its name (`GITHUB_PAT`, `SLACK_WEBHOOK_URL`, `DOCKER_HOST`, `DBUS_SESSION_BUS_ADDRESS`),
stays out. An allowed variable whose value is a credential (a proxy URL with a password) stays out too
(secrets.py decides that); `--pass-env NAME` lets any one variable in by name.
"""

from __future__ import annotations

AGENT_ENV = frozenset({
    # the shell, the user, time and temporary files
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TEMP", "TMP", "TZ",
    # language and terminal
    "LANG", "LANGUAGE", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "COLUMNS", "PAGER",
    "EDITOR", "VISUAL", "CI",
    # the network's plumbing (used only with --network; dropped when a URL holds a password)
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
    # certificate bundles: paths that TLS clients need behind a corporate proxy
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO", "NIX_SSL_CERT_FILE",
    # Python
    "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
    "PYTHONIOENCODING", "PYTHONUTF8", "POETRY_HOME", "PIPX_HOME", "PIPX_BIN_DIR",
    # Node
    "NODE_PATH", "VOLTA_HOME", "PNPM_HOME", "BUN_INSTALL", "DENO_DIR", "NODENV_ROOT", "NODENV_VERSION",
    # Rust (CARGO_* and RUSTUP_* below), Go
    "RUSTFLAGS", "RUST_BACKTRACE", "GOPATH", "GOROOT", "GOBIN", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY",
    "GOPRIVATE", "GONOPROXY", "GONOSUMDB", "GOSUMDB", "GO111MODULE", "GOTOOLCHAIN", "CGO_ENABLED",
    # JVM, Ruby
    "JAVA_HOME", "MAVEN_HOME", "M2_HOME", "GRADLE_HOME", "SDKMAN_DIR", "RBENV_ROOT", "RBENV_VERSION", "GEM_HOME",
    "GEM_PATH",
    # C and C++ builds
    "CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "PKG_CONFIG_PATH", "LD_LIBRARY_PATH",
    "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "CMAKE_PREFIX_PATH", "MAKEFLAGS",
    # Nix, Homebrew
    "NIX_PATH", "NIX_PROFILES", "HOMEBREW_PREFIX", "HOMEBREW_CELLAR", "HOMEBREW_REPOSITORY",
})
"""Allowed by exact name (compared in upper case: `http_proxy` counts as `HTTP_PROXY`)."""

AGENT_ENV_PREFIXES = ("LC_", "PYENV_", "CONDA_", "PIP_", "UV_", "NVM_", "NPM_CONFIG_", "CARGO_", "RUSTUP_")
"""Allowed families: locale categories and toolchains that keep their settings in prefixed variables (a
`PIP_INDEX_URL` with a password or a `CARGO_REGISTRY_TOKEN` is still a credential, and stays out)."""


def allowed(name: str) -> bool:
    """Whether a variable of this name may reach the agent (its value is judged apart)."""
    upper = name.upper()
    return upper in AGENT_ENV or upper.startswith(AGENT_ENV_PREFIXES)
