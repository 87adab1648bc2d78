"""Read a GGUF file's header and metadata without llama.cpp, to check a model file before loading it.

`read_gguf_info(path)` gives the architecture, the training context length, the chat template and the special
tokens, and raises `LeafError` with one clear line for a missing file, a file that is not GGUF (bad magic), or
a truncated one (the header, metadata or tensor data end early). Large arrays (the vocabulary) are skipped.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, Field

from leaf_cli.errors import LeafError

GGUF_MAGIC = b"GGUF"
# ggml tensor types: (elements per block, bytes per block); the same table as gguf-py's GGML_QUANT_SIZES.
GGML_BLOCKS: dict[int, tuple[int, int]] = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 9: (32, 40),
    10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 15: (256, 292),
    16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18), 21: (256, 110), 22: (256, 82),
    23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8), 29: (256, 56), 30: (1, 2),
    34: (256, 54), 35: (256, 66), 39: (32, 17), 40: (64, 36), 41: (128, 18),
}
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class GGUFInfo(BaseModel):
    """What leaf needs to know about a GGUF model file."""

    path: str
    version: int
    architecture: str = Field("", description="general.architecture, e.g. llama, qwen35.")
    name: str = ""
    context_length: int | None = Field(None, description="The training context (<arch>.context_length).")
    chat_template: str | None = None
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    add_bos_token: bool | None = None
    tensor_count: int = 0
    file_size: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict, description="Scalar and string metadata; arrays skipped.")


class _Truncated(Exception):
    pass


def read_gguf_info(path: str | Path) -> GGUFInfo:
    """Check and describe a GGUF file; LeafError (one line) when it cannot be a loadable model."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise LeafError(f"model file not found: {path}")
    size = path.stat().st_size
    with path.open("rb") as fh:
        magic = fh.read(4)
        if magic != GGUF_MAGIC:
            raise LeafError(f"{path} is not a GGUF model file (it starts with {magic!r}, not b'GGUF')")
        try:
            info = _read(fh, path, size)
        except _Truncated:
            raise LeafError(f"{path} is truncated ({size} bytes): download it again") from None
    return info


def _read(fh: BinaryIO, path: Path, size: int) -> GGUFInfo:
    version = _unpack(fh, "<I")
    if version not in (2, 3):
        raise LeafError(f"{path}: unsupported GGUF version {version} (leaf reads versions 2 and 3)")
    tensor_count, kv_count = _unpack(fh, "<Q"), _unpack(fh, "<Q")
    meta: dict[str, Any] = {}
    for _ in range(kv_count):
        key = _string(fh)
        meta[key] = _value(fh, _unpack(fh, "<I"))
    tensors_end = 0
    for _ in range(tensor_count):
        _string(fh)
        dims = [_unpack(fh, "<Q") for _ in range(_unpack(fh, "<I"))]
        kind, offset = _unpack(fh, "<I"), _unpack(fh, "<Q")
        tensors_end = max(tensors_end, offset + _tensor_bytes(kind, dims))
    align = int(meta.get("general.alignment", 32))
    data_start = -(-fh.tell() // align) * align
    if data_start + tensors_end > size:
        raise _Truncated
    arch = str(meta.get("general.architecture", ""))
    return GGUFInfo(
        path=str(path), version=version, architecture=arch, name=str(meta.get("general.name", "")),
        context_length=_int(meta.get(f"{arch}.context_length")), chat_template=meta.get("tokenizer.chat_template"),
        bos_token_id=_int(meta.get("tokenizer.ggml.bos_token_id")),
        eos_token_id=_int(meta.get("tokenizer.ggml.eos_token_id")),
        add_bos_token=meta.get("tokenizer.ggml.add_bos_token"), tensor_count=tensor_count, file_size=size,
        metadata=meta,
    )


def _tensor_bytes(kind: int, dims: list[int]) -> int:
    count = 1
    for dim in dims:
        count *= dim
    block, nbytes = GGML_BLOCKS.get(kind, (1, 0))  # an unknown type only loses the size check
    return count // block * nbytes


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _read_exact(fh: BinaryIO, n: int) -> bytes:
    data = fh.read(n)
    if len(data) != n:
        raise _Truncated
    return data


def _unpack(fh: BinaryIO, fmt: str) -> Any:
    return struct.unpack(fmt, _read_exact(fh, struct.calcsize(fmt)))[0]


def _string(fh: BinaryIO) -> str:
    return _read_exact(fh, _unpack(fh, "<Q")).decode("utf-8", errors="replace")


def _value(fh: BinaryIO, kind: int) -> Any:
    if kind in _SCALARS:
        return _unpack(fh, _SCALARS[kind])
    if kind == _STRING:
        return _string(fh)
    if kind == _ARRAY:
        item, count = _unpack(fh, "<I"), _unpack(fh, "<Q")
        if item in _SCALARS:  # skip numeric arrays in one seek
            fh.seek(struct.calcsize(_SCALARS[item]) * count, 1)
        else:
            for _ in range(count):
                _value(fh, item)
        return None
    raise LeafError(f"unknown GGUF metadata type {kind}: the file is damaged or from a newer GGUF version")
