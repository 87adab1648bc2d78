"""What a model costs in memory at a context size, from its GGUF header alone (no llama.cpp needed).

The cost is the weights (the file, memory-mapped), the attention KV cache (attention layers x KV heads x (key +
value head size) x context x bytes per element of the cache type) and, for a hybrid or recurrent model, one
sequence's recurrent state in f32 (per recurrent layer: the convolution window, (d_conv - 1) x (d_inner + 2 x
groups x d_state), plus the state itself, d_state x d_inner), the layout llama.cpp's `llama_hparams::n_embd_r`
/ `n_embd_s` use. llama.cpp's compute buffers (a few hundred MB) come on top and are not counted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from leaf_cli.llm.gguf_info import GGUFInfo

BYTES_PER_ELEMENT = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}
"""Bytes per cached element: ggml's block sizes (q8_0: 32 values in 34 bytes)."""


class MemoryEstimate(BaseModel):
    """Bytes a model takes at `n_ctx` tokens with a `kv_type` cache."""

    n_ctx: int
    kv_type: str
    weights: int
    kv_cache: int
    recurrent: int

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.recurrent


def _get(meta: dict[str, Any], key: str, default: Any = None) -> Any:
    value = meta.get(key)
    return default if value is None else value


def estimate(info: GGUFInfo, n_ctx: int, kv_type: str = "f16") -> MemoryEstimate | None:
    """The estimate, or None when the header lacks what it needs (per-layer head counts, an unknown layout)."""
    meta, arch = info.metadata, info.architecture
    try:
        layers = int(meta[f"{arch}.block_count"]) - int(_get(meta, f"{arch}.nextn_predict_layers", 0))
        heads = int(meta[f"{arch}.attention.head_count"])
        kv_heads = int(_get(meta, f"{arch}.attention.head_count_kv", heads))
        embd = int(meta[f"{arch}.embedding_length"])
    except (KeyError, TypeError, ValueError):
        return None
    key_len = int(_get(meta, f"{arch}.attention.key_length", embd // heads))
    value_len = int(_get(meta, f"{arch}.attention.value_length", embd // heads))
    recurrent_layers, per_layer_state = _recurrent(meta, arch, layers)
    kv = (layers - recurrent_layers) * kv_heads * (key_len + value_len) * n_ctx * BYTES_PER_ELEMENT[kv_type]
    return MemoryEstimate(n_ctx=n_ctx, kv_type=kv_type, weights=info.file_size, kv_cache=int(kv),
                          recurrent=recurrent_layers * per_layer_state)


def _recurrent(meta: dict[str, Any], arch: str, layers: int) -> tuple[int, int]:
    """(recurrent layers, bytes of one sequence's state in each): (0, 0) for a pure attention model."""
    inner = meta.get(f"{arch}.ssm.inner_size")
    if inner is None:
        return 0, 0
    conv, state = int(_get(meta, f"{arch}.ssm.conv_kernel", 0)), int(_get(meta, f"{arch}.ssm.state_size", 0))
    groups = int(_get(meta, f"{arch}.ssm.group_count", 0))
    interval = meta.get(f"{arch}.full_attention_interval")
    count = layers if interval is None else sum(1 for i in range(layers) if (i + 1) % int(interval) != 0)
    floats = max(conv - 1, 0) * (int(inner) + 2 * groups * state) + state * int(inner)
    return count, 4 * floats


def machine_memory(meminfo: Path = Path("/proc/meminfo")) -> tuple[int, int | None] | None:
    """(total, available) bytes of RAM; available is None where the system does not say."""
    try:
        fields = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in meminfo.read_text().splitlines()
                  if line.split()[1:2] and line.split()[1].isdigit()}
        return fields["MemTotal"], fields.get("MemAvailable")
    except (OSError, KeyError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), None
    except (ValueError, OSError, AttributeError):
        return None


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"
