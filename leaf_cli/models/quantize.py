"""Quantize a GGUF with llama.cpp's own quantizer, through llama-cpp-python (`llama_model_quantize`).

The wheel has no `llama-quantize` program, but the C API it wraps is the same code, K-quants included.
One function for `leaf models pull` and `leaf train export`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Iterator

from leaf_cli.errors import LeafError

QUANT_TYPES = {"f16": 1, "bf16": 32, "q8_0": 7, "q4_0": 2, "q4_1": 3, "q5_k_m": 17, "q4_k_m": 15, "q6_k": 18}
"""llama.cpp `llama_ftype` values of the quantizations leaf offers (`llama.h`)."""


def quant_label(quant: str) -> str:
    """The conventional file-name spelling: q4_k_m → Q4_K_M."""
    return quant.upper()


def check_quant(quant: str) -> str:
    key = quant.lower()
    if key not in QUANT_TYPES:
        raise LeafError(f"unknown quantization {quant!r}; choose one of {', '.join(QUANT_TYPES)}")
    return key


def quantize(src: Path, dst: Path, quant: str) -> Path:
    """Write `dst` (whole or not at all) as `src` quantized to `quant`; llama.cpp's log goes to `dst`.log."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = QUANT_TYPES[check_quant(quant)]
    partial = dst.with_name(dst.name + ".partial")
    with native_output_to(dst.with_name(dst.name + ".quantize.log")):
        status = llama_cpp.llama_model_quantize(str(src).encode(), str(partial).encode(), params)
    if status != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise LeafError(f"llama.cpp could not quantize {src} to {quant} (status {status}; "
                        f"log: {dst.name}.quantize.log); is the disk full?")
    partial.rename(dst)
    return dst


@contextlib.contextmanager
def native_output_to(log: Path) -> Iterator[None]:
    """Send everything printed while C code runs to `log`: file descriptors 1 and 2 (C's own writes) and
    Python's sys.stdout/sys.stderr (llama-cpp-python's log callback prints through them)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with log.open("wb") as sink, open(os.dup(sink.fileno()), "w", encoding="utf-8", errors="replace") as text:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
                yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
