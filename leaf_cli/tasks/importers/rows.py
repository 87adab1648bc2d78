"""Reading dataset rows as the public benchmarks distribute them: JSON lines, a JSON list, or parquet.

Parquet needs pyarrow (or pandas with a parquet engine); neither is a leaf dependency, so a parquet file
without them is one clear error saying what to install.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from leaf_cli.errors import LeafError

ROW_SUFFIXES = (".jsonl", ".json", ".parquet")


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of `path`: a .jsonl/.json/.parquet file, or a folder of them (read in name order)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in ROW_SUFFIXES)
        if not files:
            raise LeafError(f"no .jsonl, .json or .parquet files in {path}")
        return [row for f in files for row in read_rows(f)]
    if not path.is_file():
        raise LeafError(f"dataset file not found: {path}")
    if path.suffix == ".parquet":
        return _parquet(path)
    return _json_rows(path)


def _json_rows(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):  # one JSON list (PatchEval ships its dataset this way)
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LeafError(f"{path}: not a JSON list ({exc.msg} at line {exc.lineno})") from None
        return [_object(row, path, i + 1) for i, row in enumerate(rows)]
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(_object(json.loads(line), path, number))
        except json.JSONDecodeError as exc:
            raise LeafError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
    return rows


def _object(value: Any, path: Path, number: int) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise LeafError(f"{path}:{number}: expected a JSON object per row, got {type(value).__name__}")
    return value


def _parquet(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        pq = None
    if pq is not None:
        return [dict(row) for row in pq.read_table(path).to_pylist()]
    try:
        import pandas as pd
    except ImportError:
        raise LeafError(f"reading {path.name} needs pyarrow: pip install pyarrow "
                        "(or convert the dataset to JSON lines first)") from None
    try:
        frame = pd.read_parquet(path)
    except ImportError as exc:
        raise LeafError(f"reading {path.name} needs a parquet engine for pandas: pip install pyarrow ({exc})") from None
    # Round-trip through JSON so numpy scalars and arrays become plain Python values.
    return [json.loads(line) for line in frame.to_json(orient="records", lines=True).splitlines() if line]


def string_list(value: Any, field: str) -> list[str]:
    """A list of strings from a real list, a JSON string of one, or a Python-repr string of one.

    SWE-bench ships FAIL_TO_PASS as a JSON string; SWE-bench Pro mixes JSON and Python-repr strings.
    `ast.literal_eval` only reads literals, so an untrusted row cannot run code through it.
    """
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise LeafError(f"{field}: not a list of test ids: {text[:80]!r}") from None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise LeafError(f"{field}: expected a list of strings, got {type(value).__name__}")
    return list(value)
