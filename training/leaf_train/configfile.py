"""Reading the training pipeline's YAML config files: one reader for every stage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from leaf_cli.errors import LeafError


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML config file's top-level mapping; a missing or malformed file is a LeafError saying which."""
    import yaml

    if not path.is_file():
        raise LeafError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise LeafError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise LeafError(f"{path}: expected a mapping at the top level")
    return data
