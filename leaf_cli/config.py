"""Settings for `leaf fix` and friends: defaults < ~/.config/leaf/config.toml < .leaf.toml < LEAF_* < flags.

`load_settings` returns the effective settings and, for `leaf config show`, where each value came from.

A repository cannot loosen its own safety: its `.leaf.toml` may set the keys in RESTRICTED (the permission
mode, the sandbox, the network, secrets let through, the home folders shown, where requests and keys go),
and a `model` that names a file outside the repository or a hub download, only once the user has trusted
those settings (asked on a terminal, remembered in leaf's state folder, which the sandbox hides from the
agent). Trust is pinned to what was trusted: a hash of the file's safety settings, not its path, so a
`.leaf.toml` that the agent (or a pull) changes is asked about again. Until then those keys are ignored,
with a warning.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings import TomlConfigSettingsSource

from leaf_cli.errors import LeafError
from leaf_cli.tools.sandboxes import AGENT, offered

AGENT_SANDBOXES = offered(AGENT)
"""The `sandbox` setting's values, from the one registry (tools/sandboxes.py)."""

REPO_CONFIG = ".leaf.toml"
RESTRICTED = ("mode", "pass_env", "sandbox", "network", "base_url", "api_key", "sandbox_home")


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
    sandbox: Literal[AGENT_SANDBOXES] = Field(
        "auto", description="Where the agent's commands run: auto is bubblewrap on Linux and sandbox-exec on macOS; "
                            "none runs them unsandboxed (with a warning).")
    network: bool = Field(False, description="Let the sandboxed commands reach the network.")
    pass_env: list[str] = Field(default_factory=list, description="Variables beyond the allowlist that Bash may see (names), credentials included.")
    sandbox_home: list[str] = Field(default_factory=list, description="Folders or files of your home the sandboxed agent may read, beyond the toolchain allowlist (relative to the home, or absolute).")
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
        self.changed = False
        if repo_top is not None:
            values = _toml(repo_top / REPO_CONFIG)
            self.ignored = restricted_keys(values, repo_top)
            digest = safety_digest({k: values[k] for k in self.ignored})
            self.changed = trust_state(repo_top, digest) == "changed"
            if self.ignored and self.changed and trust is not None:
                print(f"leaf: {repo_top / REPO_CONFIG} has changed its safety settings since you trusted it",
                      file=sys.stderr)
            if self.ignored and trusted(repo_top, trust, self.ignored, digest):
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


def restricted_keys(values: dict[str, Any], top: Path) -> list[str]:
    """The keys of a repository's settings that need the user's trust: RESTRICTED, and `model` when it names
    a file outside the repository (a path, `replay:PATH`) or a hub download (`hf:`), not a registry name."""
    keys = [k for k in RESTRICTED if k in values]
    if "model" in values and not _model_inside(str(values["model"]), top):
        keys.append("model")
    return keys


def _model_inside(spec: str, top: Path) -> bool:
    """A registry name (or a model id on the user's server), or a file inside the repository `top`."""
    if spec.startswith("hf:"):
        return False
    path = spec.removeprefix("replay:")
    is_path = (spec.startswith("replay:") or path.endswith(".gguf") or "/" in path or os.sep in path
               or Path(path).expanduser().is_file())  # as models/resolve.py tells a path from a name
    return not is_path or Path(path).expanduser().resolve().is_relative_to(top.resolve())


def safety_digest(settings: dict[str, Any]) -> str:
    """The pin of a repository's safety settings: a hash of their values, key order and formatting aside."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


def _pins() -> dict[str, str]:
    """Trusted repositories: their path and the digest of the settings trusted there. The format before the
    pins (a list of paths) reads as no pins at all: those repositories are asked about again."""
    try:
        data = json.loads(trust_file().read_text())
    except (OSError, ValueError):
        return {}
    pins = data.get("pins") if isinstance(data, dict) else None
    return {k: v for k, v in pins.items() if isinstance(v, str)} if isinstance(pins, dict) else {}


def trust_state(top: Path, digest: str) -> Literal["trusted", "changed", "new"]:
    pinned = _pins().get(str(top.resolve()))
    return "new" if pinned is None else ("trusted" if pinned == digest else "changed")


def trusted(top: Path, ask: TrustAsk | None, keys: list[str], digest: str) -> bool:
    """Whether the user trusts these settings (`digest`) of the repository at `top`, asking through `ask`
    when given; a yes pins the digest, replacing what was trusted there before."""
    if trust_state(top, digest) == "trusted":
        return True
    if ask is None or not ask(top, keys):
        return False
    pins = {**_pins(), str(top.resolve()): digest}
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    scratch.write_text(json.dumps({"version": 2, "pins": pins}, indent=1, sort_keys=True))
    os.replace(scratch, path)  # whole or not at all: a torn file would read as no trust at all
    return True


def load_settings(flags: dict[str, Any] | None = None, repo_top: Path | None = None,
                  trust: TrustAsk | None = None) -> tuple[Settings, dict[str, str]]:
    """The effective settings and the origin of each field ("flag", "env", a file path, or "default").

    `trust` asks the user about an untrusted repository's restricted keys (None: never ask, ignore them).
    """
    sources = _Sources(flags or {}, repo_top, trust)
    if sources.ignored and repo_top is not None:
        why = ("its safety settings changed since you trusted them" if sources.changed
               else "this repository is not trusted")
        print(f"leaf: warning: ignoring {', '.join(sources.ignored)} from {repo_top / REPO_CONFIG}: {why} "
              "(leaf asks on a terminal; or set them in your own config)", file=sys.stderr)
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
