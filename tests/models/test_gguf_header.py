"""GGUF checks before a file is registered or loaded: magic, version, counts, truncation."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Callable

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.models.gguf_header import check_header, validate_gguf


def test_the_real_smollm2_file_passes(smollm2_file: Path) -> None:
    version, tensors, kvs = check_header(smollm2_file)
    assert (version, tensors) == (3, 272) and kvs > 10
    info = validate_gguf(smollm2_file)
    assert info.architecture == "llama" and info.context_length == 8192


def test_a_tiny_well_formed_file_passes(make_gguf: Callable[..., Path]) -> None:
    info = validate_gguf(make_gguf(arch="qwen35", context=262144))
    assert info.architecture == "qwen35" and info.context_length == 262144


@pytest.mark.parametrize("data, message", [
    (b"PK\x03\x04" + bytes(40), "is not a GGUF model file"),
    (b"GGUF\x03\x00", "is truncated: only 6 bytes"),
    (b"GGUF" + struct.pack("<IQQ", 7, 0, 0), "unsupported GGUF version 7"),
    (b"GGUF" + struct.pack(">IQQ", 3, 0, 0), "big-endian GGUF"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1 << 60), "corrupt GGUF header"),
    (b"GGUF" + struct.pack("<IQQ", 3, 1 << 40, 2), "corrupt GGUF header"),
])
def test_bad_headers_fail_fast_with_one_line(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    with pytest.raises(LeafError, match=message):
        validate_gguf(path)


def test_truncated_metadata_is_reported(tmp_path: Path, make_gguf: Callable[..., Path]) -> None:
    whole = make_gguf().read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[:40])
    with pytest.raises(LeafError, match="truncated"):
        validate_gguf(cut)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LeafError, match="model file not found"):
        validate_gguf(tmp_path / "nope.gguf")
