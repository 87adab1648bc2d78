"""A minimal TOML writer for leaf's own small files (manifests, the download record).

The standard library reads TOML but cannot write it; the values leaf writes are strings, numbers, booleans,
lists of scalars and one level of tables, which this covers. JSON string escaping is valid TOML basic-string
escaping, so strings go through `json.dumps`.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as a TOML value")


def _key(key: str) -> str:
    bare = key and all(c.isalnum() or c in "-_" for c in key) and key.isascii()
    return key if bare else json.dumps(key)


def dumps(data: dict[str, Any]) -> str:
    """Scalars first, then each dict value as a table (nested dicts become dotted tables). None is skipped."""
    lines: list[str] = []
    _emit(data, [], lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _emit(data: dict[str, Any], prefix: list[str], lines: list[str]) -> None:
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict) and v is not None}
    if prefix and (scalars or not tables):
        lines.append("")
        lines.append("[" + ".".join(_key(p) for p in prefix) + "]")
    for key, value in scalars.items():
        lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in tables.items():
        _emit(value, prefix + [key], lines)


def write_atomic(path: Path, text: str) -> None:
    """Write a whole file or nothing: a crash mid-write never leaves a half-written record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
