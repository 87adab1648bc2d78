"""`--kv-cache`, `--prefix-cache` and `--speculate` reach the in-process engine; `leaf doctor` sizes 64k."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.config import load_settings
from leaf_cli.errors import LeafError


def test_the_settings_become_llama_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from leaf_cli.cli.fix_session import llama_options

    settings, origins = load_settings({"kv_cache": "q8_0", "speculate": False})
    options = llama_options(settings)
    assert options["kv_cache_type"] == "q8_0" and options["speculate"] is False and origins["kv_cache"] == "flag"
    assert options["prefix_cache"] is not None and str(options["prefix_cache"]).endswith("prefix-states")
    monkeypatch.setenv("LEAF_PREFIX_CACHE", "false")
    assert llama_options(load_settings({})[0])["prefix_cache"] is None
    assert llama_options(load_settings({})[0])["speculate"] is None  # auto: decided from the model's header


def test_an_unknown_kv_cache_type_is_one_clear_error() -> None:
    with pytest.raises(LeafError, match="kv_cache"):
        load_settings({"kv_cache": "q3"})


def test_the_kv_cache_option_reaches_llama_cpp(smollm2_path: Path) -> None:
    from llama_cpp import llama_cpp as lib

    from leaf_cli.models.resolve import make_engine

    engine = make_engine(str(smollm2_path), n_ctx=512, llama_options={"kv_cache_type": "q8_0", "speculate": None})
    assert engine.llm.context_params.type_k == lib.GGML_TYPE_Q8_0 == engine.llm.context_params.type_v
    assert engine.speculate  # attention-only: drafting on by default


def test_doctor_estimate_matches_llama_cpp_state_size(smollm2_path: Path) -> None:
    """The KV part of the estimate against the bytes llama.cpp itself saves for N evaluated tokens."""
    from llama_cpp import llama_cpp as lib

    from leaf_cli.llm.gguf_info import read_gguf_info
    from leaf_cli.llm.llama_runtime import load_llama
    from leaf_cli.models.memory import estimate

    info = read_gguf_info(smollm2_path)
    for kv in ("f16", "q8_0"):
        llm, _ = load_llama(smollm2_path, n_ctx=1024, kv_cache_type=kv)
        llm.eval(llm.tokenize(b"def f(x):\n    return x\n" * 40)[:256])
        saved = lib.llama_state_seq_get_size(llm.ctx, 0)
        assert estimate(info, 256, kv).kv_cache == pytest.approx(saved, rel=0.02)


def test_doctor_says_what_64k_costs(smollm2_path: Path) -> None:
    from leaf_cli.models.doctor import check_memory

    roomy = check_memory(smollm2_path, machine=(64 * 10**9, 32 * 10**9))
    assert roomy.status == "ok" and "f16 KV cache" in roomy.detail and "q8_0" in roomy.detail
    tight = check_memory(smollm2_path, machine=(10**9, 250 * 10**6))  # f16 (0.29 GB) no, q8_0 (0.20 GB) yes
    assert tight.status == "warn" and "--kv-cache q8_0" in tight.fix
