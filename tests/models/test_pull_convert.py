"""`leaf models pull frognano-4b` end to end on the tiny Qwen3.5 checkpoint: the stand-in hub serves it under
the real repository id (no model hub is reachable here); huggingface_hub, llama.cpp's own converter, its
quantizer and the runtime that loads the result are all real."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.models.registry import data_dir
from tests.conftest import PulledModel, qwen_chat_template

pytestmark = pytest.mark.llama


def test_pull_converts_quantizes_verifies_and_registers(tiny_qwen35_pulled: PulledModel) -> None:
    stages = [stage for stage, _line in tiny_qwen35_pulled.stages]
    assert stages == ["resolve", "download", "convert", "quantize", "verify", "verify", "register"]
    lines = dict(tiny_qwen35_pulled.stages)
    assert "microsoft/FrogNano-4B-2609@" in lines["resolve"] and "needs" in lines["resolve"]  # said before download
    verified = tiny_qwen35_pulled.stages[-2][1]
    assert verified.startswith("loads as qwen35, hybrid, chat template present, greedy next token agrees on ")
    gguf = tiny_qwen35_pulled.gguf
    assert gguf.name == "FrogNano-4B-2609-Q4_K_M.gguf" and gguf.parent.name == "gguf"
    assert not (gguf.parent.parent / "pulls" / "frognano-4b").exists()  # intermediates removed (no --keep)


def test_the_pulled_gguf_is_a_hybrid_qwen35_with_the_real_template(tiny_qwen35_gguf: Path) -> None:
    import llama_cpp

    from leaf_cli.llm.llama_runtime import load_llama

    llm, info = load_llama(tiny_qwen35_gguf, n_ctx=256)
    try:
        assert info.architecture == "qwen35" and llama_cpp.llama_model_is_hybrid(llm.model)
        assert info.chat_template == qwen_chat_template()
        assert info.metadata["qwen35.nextn_predict_layers"] == 1  # the MTP layer came through
        ids = llm.tokenize(b"<|im_start|>user\nhi<|im_end|>\n<think>", add_bos=False, special=True)
        assert ids[0] == 248045 and ids[-1] == 248068  # Qwen3.5's special tokens at their real ids
    finally:
        llm.close()


def test_a_test_can_register_the_tiny_model_as_frognano(tiny_frognano_registered: Path) -> None:
    from leaf_cli.models.registry import get_manifest
    from leaf_cli.models.store import locate

    assert locate(get_manifest("frognano-4b")) == tiny_frognano_registered
    assert tiny_frognano_registered not in data_dir().rglob("*")  # this test's home only records it
