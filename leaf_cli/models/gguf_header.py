"""Check a GGUF file before leaf registers or loads it.

The fixed 24-byte header first (magic `GGUF`, uint32 version, uint64 tensor and key/value counts, ggml
`docs/gguf.md`), with bounds on the counts, so a corrupt file fails fast instead of making the metadata reader
walk (or allocate) billions of entries; then `leaf_cli.llm.gguf_info.read_gguf_info` for the metadata and the
check that the tensor data is all there (a truncated download).
"""

from __future__ import annotations

import struct
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.llm.gguf_info import GGUFInfo, read_gguf_info

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
# Far above any real model (a 400B MoE has a few thousand tensors and ~50 keys): more means a corrupt header.
MAX_TENSORS = 1_000_000
MAX_KV = 100_000


def check_header(path: Path) -> tuple[int, int, int]:
    """(version, tensor count, key/value count) of a plausible GGUF file, else one LeafError line."""
    if not path.is_file():
        raise LeafError(f"model file not found: {path}")
    with path.open("rb") as f:
        head = f.read(24)
    if head[:4] != MAGIC:
        raise LeafError(f"{path} is not a GGUF model file (it starts with {head[:4]!r}, not b'GGUF')")
    if len(head) < 24:
        raise LeafError(f"{path} is truncated: only {len(head)} bytes")
    (version,) = struct.unpack("<I", head[4:8])
    if version not in SUPPORTED_VERSIONS:
        if struct.unpack(">I", head[4:8])[0] in SUPPORTED_VERSIONS:
            raise LeafError(f"{path} is a big-endian GGUF; llama.cpp on this machine needs a little-endian file")
        raise LeafError(f"{path}: unsupported GGUF version {version} (leaf reads versions 2 and 3)")
    tensors, kvs = struct.unpack("<QQ", head[8:24])
    if tensors > MAX_TENSORS or kvs > MAX_KV:
        raise LeafError(f"{path}: corrupt GGUF header ({tensors} tensors, {kvs} metadata keys)")
    return version, tensors, kvs


def validate_gguf(path: Path) -> GGUFInfo:
    """Header bounds, then metadata and the tensor-data size check. Returns what the file says about itself."""
    check_header(path)
    return read_gguf_info(path)
