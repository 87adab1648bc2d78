"""Settings for `leaf fix` and friends: defaults < ~/.config/leaf/config.toml < .leaf.toml < LEAF_* < flags.

`load_settings` returns the effective settings and, for `leaf config show`, where each value came from.

A repository cannot loosen its own safety: its `.leaf.toml` may set the keys in RESTRICTED (the permission
mode, the sandbox, the network, secrets let through, where requests and keys go) only once the user has
trusted that repository (asked once on a terminal, remembered in leaf's state folder, which the sandbox
hides from the agent). Until then those keys are ignored, with a warning.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings import TomlConfigSettingsSource

from leaf_cli.errors import LeafError

REPO_CONFIG = ".leaf.toml"
RESTRICTED = ("mode", "pass_env", "sandbox", "network", "base_url", "api_key")


class Settings(BaseSettings):
    """Every knob the CLI reads. Each field can be set in either TOML file, as LEAF_<NAME>, or as a flag."""

    model_config = SettingsConfigDict(env_prefix="LEAF_", extra="ignore")

    model: str = Field("frognano-4b", description="Registry name, .gguf path, hf:REPO/FILE, replay:PATH, or a model id on --base-url.")
    base_url: str | None = Field(None, description="An OpenAI-compatible server (llama-server, vLLM, Ollama) instead of in-process llama.cpp.")
    api_key: str | None = Field(None, description="Key for --base-url servers that want one (never written to trajectories).")
    n_ctx: int | None = Field(None, description="Context window for the in-process engine; the model's manifest decides when unset.")
    max_turns: int = Field(100, ge=1, description="Most assistant turns per run.")
    max_time: float = Field(3000.0, gt=0, description="Wall-clock limit of a run in seconds.")
    mode: Literal["ask", "auto-edit", "yolo"] | None = Field(None, description="Permission mode; ask on a terminal, yolo without one.")
    sandbox: Literal["auto", "bwrap", "sandbox-exec", "none"] = Field(
        "auto", description="Where the agent's commands run: auto is bubblewrap on Linux and sandbox-exec on macOS; "
                            "none runs them unsandboxed (with a warning).")
    network: bool = Field(False, description="Let the sandboxed commands reach the network.")
    pass_env: list[str] = Field(default_factory=list, description="Secret-looking variables Bash may still see (names).")
    quiet: bool = Field(False, description="Hide the model's reasoning in the live view.")
    constrain_tools: bool = Field(False, description="Grammar-constrain tool calls (in-process engine).")
    temperature: float | None = Field(None, ge=0, description="Sampling temperature; the model's manifest decides when unset.")
    seed: int | None = Field(None, description="Sampling seed, for reproducible runs.")
    thinking_budget: int | None = Field(None, ge=1, description="Most reasoning tokens per reply before the in-process engine closes it with </think>; unset = no limit.")
    max_tokens: int | None = Field(None, ge=1, description="Most tokens one reply may generate (a cut reply ends the run as max_tokens); the model's manifest decides when unset (8192 by default).")
    kv_cache: Literal["f16", "q8_0"] = Field(
        "f16", description="KV cache type of the in-process engine: q8_0 halves the attention cache (it turns flash "
                           "attention on); `leaf doctor` says what 64k costs with each.")
    prefix_cache: bool = Field(True, description="Save the state after the system prompt and tools to leaf's cache "
                                                 "folder and load it on the next run instead of evaluating them again.")
    prefix_cache_mb: int = Field(2048, ge=0, description="Most megabytes the saved prefix states may take on disk (the "
                                                         "least recently used go first).")
    speculate: bool | None = Field(None, description="Prompt-lookup drafting in the in-process engine (verifies n-gram "
                                   "drafts of the conversation in one batch; the same output distribution); unset = on "
                                   "for attention-only models, where it was measured faster, off for hybrids.")


def user_config_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir("leaf", appauthor=False)) / "config.toml"


class _Sources:
    """The sources in priority order (highest first), each a (label, dict of the values it sets)."""

    def __init__(self, flags: dict[str, Any], repo_top: Path | None, trust: TrustAsk | None = None) -> None:
        flags = {k: v for k, v in flags.items() if v is not None and v != [] and k in Settings.model_fields}
        self.layers: list[tuple[str, dict[str, Any]]] = [("flag", flags), ("env", _read(EnvSettingsSource(Settings)))]
        self.ignored: list[str] = []
        if repo_top is not None:
            values = _toml(repo_top / REPO_CONFIG)
            self.ignored = [k for k in RESTRICTED if k in values]
            if self.ignored and trusted(repo_top, trust, self.ignored):
                self.ignored = []
            for key in self.ignored:
                values.pop(key)
            self.layers.append((str(repo_top / REPO_CONFIG), values))
        self.layers.append((str(user_config_path()), _toml(user_config_path())))

    def origin(self, name: str) -> str:
        return next((label for label, values in self.layers if name in values), "default")

    def merged(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for _label, values in reversed(self.layers):
            merged.update(values)
        return merged


TrustAsk = Callable[[Path, list[str]], bool]
"""Asks the user whether to trust a repository whose .leaf.toml sets these restricted keys."""


def trust_file() -> Path:
    from leaf_cli.repo.runs import state_root

    return state_root() / "trusted_repos.json"


def trusted(top: Path, ask: TrustAsk | None, keys: list[str]) -> bool:
    """Whether the user trusts the repository at `top` (asking once through `ask` when given)."""
    path = trust_file()
    try:
        known = set(json.loads(path.read_text())) if path.is_file() else set()
    except (OSError, ValueError):
        known = set()
    key = str(top.resolve())
    if key in known:
        return True
    if ask is None or not ask(top, keys):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sorted(known | {key}), indent=1))
    return True


def load_settings(flags: dict[str, Any] | None = None, repo_top: Path | None = None,
                  trust: TrustAsk | None = None) -> tuple[Settings, dict[str, str]]:
    """The effective settings and the origin of each field ("flag", "env", a file path, or "default").

    `trust` asks the user about an untrusted repository's restricted keys (None: never ask, ignore them).
    """
    sources = _Sources(flags or {}, repo_top, trust)
    if sources.ignored and repo_top is not None:
        print(f"leaf: warning: ignoring {', '.join(sources.ignored)} from {repo_top / REPO_CONFIG}: this repository "
              "is not trusted (leaf asks once on a terminal; or set them in your own config)", file=sys.stderr)
    try:
        settings = Settings.model_validate(sources.merged())
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise LeafError(f"setting {field} ({sources.origin(field)}): {err['msg']}") from None
    return settings, {name: sources.origin(name) for name in Settings.model_fields}


def _toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        values = _read(TomlConfigSettingsSource(Settings, toml_file=path))
    except Exception as exc:  # noqa: BLE001 - tomllib's error type differs across versions; say which file
        raise LeafError(f"{path} is not valid TOML ({exc})") from None
    return {k.replace("-", "_"): v for k, v in values.items() if k.replace("-", "_") in Settings.model_fields}


def _read(source: PydanticBaseSettingsSource) -> dict[str, Any]:
    return {k: v for k, v in source().items() if k in Settings.model_fields}
