"""Loading a GGUF model into llama-cpp-python safely, and llama.cpp's grammar as a token filter.

`load_llama` checks the file itself first (`gguf_info`), applies the AMX workaround (`use_extra_bufts=False`;
a native build SIGILLs on VMs that advertise AMX, see DESIGN.md) unless the caller or `LEAF_LLAMA_EXTRA_BUFTS=1`
opts out, and turns every load failure into one `LeafError` line.

This is also the one module that reaches llama-cpp-python's private attributes (`Llama._ctx`, `._model`,
`._batch`): each reach is one small function below, listed in `INTERNALS`, so that a llama-cpp-python upgrade
that renames one touches this file only. `load_llama` checks them all, so a missing one fails at load as
one line naming the version (`LlamaInternalsError`, an `InfraError`; tests/llm/test_llama_runtime_internals.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.metadata
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from leaf_cli.errors import InfraError, LeafError
from leaf_cli.llm.gguf_info import GGUFInfo, read_gguf_info

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_cpp import llama_vocab_p

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


def load_llama(path: str | Path, *, info: GGUFInfo | None = None, n_ctx: int | None = None,
               n_threads: int | None = None, n_batch: int = 512, n_ubatch: int = 512,
               kv_cache_type: str | None = None, flash_attn: bool | None = None, extra_bufts: bool | None = None,
               seed: int = 0, n_rs_seq: int = 0) -> tuple[Llama, GGUFInfo]:
    """(llama_cpp.Llama, the file's metadata). `n_ctx` defaults to the training context, capped at 65,536;
    `n_ubatch` (the micro-batch llama.cpp computes at once) is at most `n_batch`; `n_rs_seq`: recurrent-state
    rollback depth (see `_model_params`). A llama-cpp-python without the internals leaf reaches fails here,
    naming its version (`require_internals`). `info`: the file's `read_gguf_info`, when the caller has it."""
    info = info if info is not None else read_gguf_info(path)
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
    require_internals(llm)
    return llm, info


INTERNALS = ("_ctx.kv_cache_seq_rm", "_ctx.decode", "_batch.set_batch", "_model.vocab")
"""Every private path below `Llama` the functions here follow; `load_llama` checks them all on the model it
loads, and the tests check this list against the paths the functions follow."""


class LlamaInternalsError(InfraError):
    """The installed llama-cpp-python lacks an internal leaf relies on: an upgrade renamed or removed it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "llama_cpp")


def llama_cpp_version() -> str:
    """The installed llama-cpp-python's version, for the error that names it."""
    try:
        return importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        import llama_cpp  # a source checkout on the path has no distribution metadata

        return str(getattr(llama_cpp, "__version__", "unknown"))


def _missing(paths: list[str]) -> LlamaInternalsError:
    return LlamaInternalsError(
        f"llama-cpp-python {llama_cpp_version()} has no {', '.join(f'Llama.{p}' for p in paths)}, which leaf "
        f"relies on; install a llama-cpp-python leaf supports (the `llama` extra in leaf's pyproject.toml names "
        f"the versions) or adapt leaf_cli/llm/llama_runtime.py")


def _reach(llm: Llama, path: str) -> Any:  # Any: a private attribute has no public type to name
    """Follow a dotted private path from a `Llama`; `LlamaInternalsError` when a step is missing."""
    value: object = llm
    for name in path.split("."):
        try:
            value = getattr(value, name)
        except AttributeError:
            raise _missing([path]) from None
    return value


def missing_internals(llm: Llama) -> list[str]:
    """The paths of `INTERNALS` this `llm` lacks (none on a supported llama-cpp-python)."""
    missing = []
    for path in INTERNALS:
        try:
            _reach(llm, path)
        except LlamaInternalsError:
            missing.append(path)
    return missing


def require_internals(llm: Llama) -> None:
    """Fail at load, with every missing internal named, rather than at the first rewind or draft."""
    missing = missing_internals(llm)
    if missing:
        raise _missing(missing)


def vocab_handle(llm: Llama) -> llama_vocab_p:
    """The `llama_vocab *` of the loaded model (`Llama._model.vocab`; `Llama` has no public accessor).

    The grammar sampler and the end-of-generation check take it (`llama_sampler_init_grammar`,
    `llama_vocab_is_eog`)."""
    vocab: llama_vocab_p = _reach(llm, "_model.vocab")
    return vocab


def kv_seq_rm(llm: Llama, p0: int, p1: int = -1, seq_id: int = 0) -> bool:
    """Forget positions [p0, p1) of sequence `seq_id` (p1 = -1: to the end); False when llama.cpp cannot
    (a recurrent state cut inside the sequence without a snapshot).

    Reaches `Llama._ctx.kv_cache_seq_rm` (`llama_memory_seq_rm` on the context's memory): `Llama` only
    exposes a full `reset()`, and leaf keeps a shared prefix while cutting what follows."""
    return bool(_reach(llm, "_ctx.kv_cache_seq_rm")(seq_id, p0, p1))


def decode_batch(llm: Llama, tokens: list[int], n_past: int) -> None:
    """Decode `tokens` at positions n_past.. as one batch with logits for every position.

    Reaches `Llama._batch.set_batch` and `Llama._ctx.decode`: `Llama.eval` keeps only the last position's
    logits unless the model was loaded with `logits_all`, and a draft's verification needs them all."""
    batch = _reach(llm, "_batch")
    _reach(llm, "_batch.set_batch")(batch=tokens, n_past=n_past, logits_all=True)
    _reach(llm, "_ctx.decode")(batch)


class GrammarFilter:
    """llama.cpp's GBNF grammar sampler used as a filter: which candidate tokens may come next."""

    def __init__(self, llm: Llama, grammar: str) -> None:
        from llama_cpp import llama_cpp as lib

        self._lib = lib
        self._sampler = lib.llama_sampler_init_grammar(vocab_handle(llm), grammar.encode(), b"root")
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
