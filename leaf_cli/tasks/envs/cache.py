"""Where leaf keeps built environments and repository snapshots, and the lock that guards each entry."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator


def cache_root() -> Path:
    """`$LEAF_CACHE_DIR`, else the platform's user cache folder for leaf."""
    override = os.environ.get("LEAF_CACHE_DIR")
    if override:
        return Path(override).expanduser().resolve()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("leaf", appauthor=False))


def cache_key(*parts: Any) -> str:
    """A short stable hash of JSON-able parts."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if needed). Works across processes and across threads,
    since each holder opens its own file description."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
