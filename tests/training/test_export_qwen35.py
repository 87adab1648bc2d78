"""`leaf train export` of a trained Qwen3.5 checkpoint: llama.cpp's converter and quantizer (as `leaf models
pull` runs them), a GGUF that loads as a hybrid `qwen35`, and next-token KL against the checkpoint.

Real parts: the tiny Qwen3.5 checkpoint loaded by transformers as the RL policy loads it, one weight
"trained" (shifted) so the export must carry a change, llama.cpp's converter, quantizer and runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

pytestmark = [pytest.mark.slow, pytest.mark.llama]


@pytest.fixture(scope="module")
def trained_qwen35(tmp_path_factory: pytest.TempPathFactory, tiny_qwen35_hf: Path) -> Path:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_qwen35_hf, dtype=torch.float32)
    with torch.no_grad():  # a visible "training update": a sharper final norm moves every logit
        model.model.norm.weight.add_(1.0)
    out = tmp_path_factory.mktemp("trained") / "qwen35-policy"
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_qwen35_hf).save_pretrained(out)
    return out


def test_export_converts_quantizes_and_verifies_a_trained_qwen35(trained_qwen35: Path, tiny_qwen35_gguf: Path,
                                                                  tmp_path: Path) -> None:
    from leaf_train.export import export, next_token_kl

    report = export(trained_qwen35, None, tmp_path / "gguf", quant="q4_k_m", name="my-frognano")
    assert report.method == "convert" and report.architecture == "qwen35" and report.hybrid
    assert Path(report.gguf).name == "my-frognano-Q4_K_M.gguf"
    print(f"export KL vs checkpoint: BF16 {report.kl_unquantized:.6f}, Q4_K_M {report.kl_quantized:.6f}, "
          f"greedy {report.top1_agree}/{report.prompts}")
    assert report.kl_unquantized < 0.01  # BF16 rounding of fp32 weights only
    assert report.kl_quantized < 0.5
    # ...while the pulled, untrained GGUF is far from it: the export carried the update.
    assert next_token_kl(trained_qwen35, tiny_qwen35_gguf) > 10 * report.kl_unquantized
    from leaf_cli.models.registry import get_manifest
    from leaf_cli.models.store import locate

    assert locate(get_manifest("my-frognano")) == Path(report.gguf)  # --name registered it


def test_export_without_a_base_for_a_non_qwen35_checkpoint_is_one_line(tmp_path: Path) -> None:
    from leaf_train.export import main

    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}')
    assert main([str(checkpoint)]) == 2
