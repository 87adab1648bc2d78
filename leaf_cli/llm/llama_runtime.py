"""Loading a GGUF model into llama-cpp-python safely, and llama.cpp's grammar as a token filter.

`load_llama` checks the file itself first (`gguf_info`), applies the AMX workaround (`use_extra_bufts=False`;
a native build SIGILLs on VMs that advertise AMX, see DESIGN.md) unless the caller or `LEAF_LLAMA_EXTRA_BUFTS=1`
opts out, and turns every load failure into one `LeafError` line.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from leaf_cli.errors import LeafError
from leaf_cli.llm.gguf_info import GGUFInfo, read_gguf_info

KV_CACHE_TYPES = {"f16": 1, "q8_0": 8, "q4_0": 2}
"""ggml type ids for `type_k`/`type_v`. Quantized KV needs flash attention in llama.cpp."""
MAX_CONTEXT = 65_536


def extra_bufts_wanted(flag: bool | None) -> bool:
    """Whether to keep llama.cpp's extra buffer types (REPACK/AMX); off unless asked for."""
    if flag is not None:
        return flag
    return os.environ.get("LEAF_LLAMA_EXTRA_BUFTS", "") in ("1", "true", "yes")


@contextlib.contextmanager
def _model_params(extra_bufts: bool, n_rs_seq: int = 0) -> Iterator[None]:
    """`Llama()` has no keywords for these, so wrap the default model and context params it starts from.

    `n_rs_seq`: per-token recurrent-state snapshots of the last micro-batch, which let a hybrid model drop
    rejected draft tokens (`kv_cache_seq_rm` inside the sequence); 0 keeps llama.cpp's default (none)."""
    from llama_cpp import llama_cpp as lib

    model_params, context_params = lib.llama_model_default_params, lib.llama_context_default_params

    def patched_model() -> Any:
        params = model_params()
        params.use_extra_bufts = extra_bufts
        return params

    def patched_context() -> Any:
        params = context_params()
        params.n_rs_seq = n_rs_seq
        return params

    if not extra_bufts:
        lib.llama_model_default_params = patched_model
    if n_rs_seq:
        lib.llama_context_default_params = patched_context
    try:
        yield
    finally:
        lib.llama_model_default_params, lib.llama_context_default_params = model_params, context_params


def load_llama(path: str | Path, *, n_ctx: int | None = None, n_threads: int | None = None,
               n_batch: int = 512, n_ubatch: int = 512, kv_cache_type: str | None = None,
               flash_attn: bool | None = None, extra_bufts: bool | None = None, seed: int = 0,
               n_rs_seq: int = 0) -> tuple[Any, GGUFInfo]:
    """(llama_cpp.Llama, the file's metadata). `n_ctx` defaults to the training context, capped at 65,536;
    `n_ubatch` (the micro-batch llama.cpp computes at once) is at most `n_batch`; `n_rs_seq`: recurrent-state
    rollback depth (see `_model_params`)."""
    info = read_gguf_info(path)
    try:
        from llama_cpp import Llama
    except ImportError:
        raise LeafError("llama-cpp-python is not installed: pip install 'leaf-agent[llama]' "
                        "(build flags in the README)") from None
    if kv_cache_type is not None and kv_cache_type not in KV_CACHE_TYPES:
        raise LeafError(f"unknown KV cache type {kv_cache_type!r}; choose one of {', '.join(KV_CACHE_TYPES)}")
    ctx = min(n_ctx or info.context_length or MAX_CONTEXT, info.context_length or MAX_CONTEXT, MAX_CONTEXT)
    kv = KV_CACHE_TYPES.get(kv_cache_type or "f16")
    quantized = kv_cache_type not in (None, "f16")
    try:
        with _model_params(extra_bufts_wanted(extra_bufts), n_rs_seq):
            llm = Llama(model_path=str(info.path), n_ctx=ctx, n_batch=min(n_batch, ctx),
                        n_ubatch=min(n_ubatch, n_batch, ctx), n_threads=n_threads,
                        type_k=kv, type_v=kv, flash_attn=quantized if flash_attn is None else flash_attn,
                        seed=seed, verbose=False)
    except (ValueError, RuntimeError) as exc:
        raise LeafError(f"llama.cpp cannot load {info.path} (architecture {info.architecture or 'unknown'!r}): "
                        f"{exc}; the architecture may be unsupported by this llama-cpp-python build") from None
    return llm, info


class GrammarFilter:
    """llama.cpp's GBNF grammar sampler used as a filter: which candidate tokens may come next."""

    def __init__(self, llm: Any, grammar: str) -> None:
        from llama_cpp import llama_cpp as lib

        self._lib = lib
        self._sampler = lib.llama_sampler_init_grammar(llm._model.vocab, grammar.encode(), b"root")
        if not self._sampler:
            raise ValueError("llama.cpp rejected the tool-call grammar")
        self._dtype = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)

    def valid(self, ids: np.ndarray) -> np.ndarray:
        data = np.zeros(len(ids), dtype=self._dtype)
        data["id"] = ids
        array = self._lib.llama_token_data_array(
            data=data.ctypes.data_as(self._lib.llama_token_data_p), size=len(ids), selected=-1, sorted=False)
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(array))
        return np.isfinite(data["logit"])

    def accept(self, token: int) -> None:
        self._lib.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        if self._sampler:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None

    def __del__(self) -> None:
        self.close()
