"""Which models are on disk: the record of verified downloads, and locating any manifest's GGUF file.

A pulled file counts as present only after its checksum was verified and recorded here
(`<data dir>/downloads.toml`), so an interrupted or corrupt download is never taken for a model.
"""

from __future__ import annotations

import hashlib
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from leaf_cli.errors import LeafError
from leaf_cli.models.manifest import Manifest
from leaf_cli.models.registry import data_dir, package_file
from leaf_cli.models.toml_write import dumps, write_atomic

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def downloads_path() -> Path:
    return data_dir() / "downloads.toml"


def read_downloads() -> dict[str, dict[str, Any]]:
    path = downloads_path()
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise LeafError(f"broken download record {path}: {exc}; delete it and pull again") from None


def record_download(name: str, path: Path, sha256: str, verified_by: str, **extra: Any) -> None:
    """Remember a verified download. `verified_by`: "manifest", "hub" (the hub's LFS sha256), "none", or
    "converted" (made from hub-verified safetensors and checked by loading it); `extra` is kept alongside."""
    records = read_downloads()
    records[name] = {
        **extra,
        "path": str(path),
        "sha256": sha256,
        "size_bytes": path.stat().st_size,
        "verified_by": verified_by,
        "pulled_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    write_atomic(downloads_path(), dumps(records))


def forget_download(name: str) -> dict[str, Any] | None:
    records = read_downloads()
    removed = records.pop(name, None)
    if removed is not None:
        write_atomic(downloads_path(), dumps(records))
    return removed


def locate(manifest: Manifest) -> Path | None:
    """The model's GGUF file if it is on disk and usable, else None. Never touches the network."""
    source = manifest.source
    if source.kind == "package":
        return package_file(source.package or "", source.resource or "")
    if source.kind == "path":
        path = Path(source.path or "")
        return path if path.is_file() else None
    record = read_downloads().get(manifest.name)
    if not record:
        return None
    path = Path(record.get("path", ""))
    # A file whose size changed since it was verified is not the file that was verified.
    if not path.is_file() or path.stat().st_size != record.get("size_bytes"):
        return None
    return path


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()
