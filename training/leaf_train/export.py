"""`leaf train export`: a trained HF checkpoint into a GGUF the CLI runs, verified against the checkpoint.

Two routes, one quantizer (llama.cpp's, as `leaf models pull` uses):
- **Qwen3.5** (FrogNano's architecture; transformers cannot read `qwen35` GGUFs, so its policy is trained from
  the safetensors checkpoint): llama.cpp's own converter, exactly as `leaf models pull` runs it, then the
  quantizer, then the checks pull makes (loads as `qwen35`, hybrid, chat template).
- **A policy that started from a GGUF** (SmolLM2 and other test models): written *back* into that file's
  layout — metadata and tokenizer copied verbatim, every tensor the checkpoint holds replacing the base
  tensor (undoing the transforms transformers applied when it loaded the GGUF).
Either way the export is then verified: next-token distributions of the GGUF in llama.cpp against the
checkpoint in transformers, on a few prompts, as a KL divergence (unquantized and quantized).

Simplification: the write-back architectures are those whose GGUF↔HF tensor transform we undo here
(`_TO_GGUF`), checked numerically against transformers' own loader on every export.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
from pydantic import BaseModel

from leaf_cli.models.quantize import QUANT_TYPES, check_quant, quant_label
from leaf_cli.models.quantize import quantize as llama_quantize
from leaf_cli.models.verify import PROMPTS as DEFAULT_PROMPTS

__all__ = ["QUANT_TYPES", "ExportReport", "export", "next_token_kl", "quantize", "write_back"]


class ExportReport(BaseModel):
    """What an export produced and how close it is to the checkpoint."""

    gguf: str
    quant: str
    method: str = "write-back"  # or "convert" (llama.cpp's converter, Qwen3.5)
    architecture: str = ""
    hybrid: bool = False
    tensors_replaced: int = 0
    tensors_copied: int = 0
    kl_unquantized: float
    kl_quantized: float
    top1_agree: int = 0
    prompts: int = 0
    registered_as: str | None = None


def _permute_qk(n_head_key: str) -> Callable[[np.ndarray, dict[str, Any]], np.ndarray]:
    """llama.cpp's Q/K row permutation (rotary halves interleaved), the inverse of transformers' unpermute."""

    def forward(w: np.ndarray, config: dict[str, Any]) -> np.ndarray:
        n_head = config[n_head_key]
        return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

    return forward


_TO_GGUF: dict[str, dict[str, Callable[[np.ndarray, dict[str, Any]], np.ndarray]]] = {
    # GGUF tensor-name fragment -> transform from the HF weight to the GGUF weight
    "llama": {".attn_q.": _permute_qk("num_attention_heads"), ".attn_k.": _permute_qk("num_key_value_heads")},
    "qwen2": {},
    "qwen3": {},
}


def write_back(checkpoint: Path, base_gguf: Path, out: Path) -> tuple[int, int]:
    """Write `out`: `base_gguf` with every tensor the checkpoint holds replaced (F32 vectors, F16 matrices).

    Returns (replaced, copied) tensor counts.
    """
    import gguf
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.modeling_gguf_pytorch_utils import TENSOR_PROCESSORS, TensorProcessor, get_gguf_hf_weights_map

    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32)
    config = model.config.to_dict()
    arch = model.config.model_type
    if arch not in _TO_GGUF:
        raise ValueError(f"export supports {sorted(_TO_GGUF)} models, not {arch!r}")
    processor = TENSOR_PROCESSORS.get(arch, TensorProcessor)(config=config)
    gguf_to_hf = get_gguf_hf_weights_map(model, processor)
    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}

    reader = gguf.GGUFReader(base_gguf)
    writer = gguf.GGUFWriter(out, arch=str(reader.fields["general.architecture"].contents()), endianess=reader.endianess)
    _copy_metadata(reader, writer)
    tensors: list[tuple[str, np.ndarray | None, Any]] = []
    for tensor in reader.tensors:
        hf_name = gguf_to_hf.get(tensor.name)
        if hf_name is None or hf_name not in state:
            tensors.append((tensor.name, None, tensor))
            continue
        weight = _to_gguf(arch, tensor.name, state[hf_name], config)
        _check_inverse(processor, tensor.name, weight, state[hf_name])
        tensors.append((tensor.name, weight.astype(np.float32 if weight.ndim == 1 else np.float16), None))
    for name, weight, raw in tensors:
        if weight is None:
            writer.add_tensor_info(name, raw.data.shape, raw.data.dtype, raw.data.nbytes, raw.tensor_type)
        else:
            qtype = gguf.GGMLQuantizationType.F32 if weight.dtype == np.float32 else gguf.GGMLQuantizationType.F16
            writer.add_tensor_info(name, weight.shape, weight.dtype, weight.nbytes, qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _name, weight, raw in tensors:
        writer.write_tensor_data(raw.data if weight is None else weight)
    writer.close()
    replaced = sum(1 for _n, w, _r in tensors if w is not None)
    return replaced, len(tensors) - replaced


def _copy_metadata(reader: Any, writer: Any) -> None:
    import gguf

    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # the writer adds these itself
        value_type = field.types[0]
        sub_type = field.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), value_type, sub_type=sub_type)


def _to_gguf(arch: str, gguf_name: str, weight: np.ndarray, config: dict[str, Any]) -> np.ndarray:
    for fragment, transform in _TO_GGUF[arch].items():
        if fragment in gguf_name:
            return transform(weight, config)
    return weight


def _check_inverse(processor: Any, gguf_name: str, gguf_weight: np.ndarray, hf_weight: np.ndarray) -> None:
    """transformers' loader applied to what we write must give back the checkpoint's weight exactly."""
    loaded = processor.process(weights=gguf_weight, name=gguf_name).weights
    if loaded.shape != hf_weight.shape or not np.array_equal(loaded, hf_weight):
        raise AssertionError(f"export transform of {gguf_name} does not invert transformers' loader")


def quantize(src: Path, dst: Path, quant: str) -> None:
    """Quantize with llama.cpp's own quantizer (leaf_cli.models.quantize, shared with `leaf models pull`)."""
    llama_quantize(src, dst, quant)


def next_token_kl(checkpoint: Path, gguf_path: Path, prompts: tuple[str, ...] = DEFAULT_PROMPTS) -> float:
    """Mean KL(checkpoint ‖ GGUF) of the next-token distribution after each prompt, same token ids for both."""
    return kl_against_checkpoint(checkpoint, gguf_path, prompts)[0]


def kl_against_checkpoint(checkpoint: Path, gguf_path: Path,
                          prompts: tuple[str, ...] = DEFAULT_PROMPTS) -> tuple[float, int]:
    """(mean KL(checkpoint ‖ GGUF), prompts whose greedy next token agrees), on the GGUF's token ids."""
    import torch
    from transformers import AutoModelForCausalLM

    from leaf_cli.models.verify import next_token_logprobs

    ids, gguf_logprobs = next_token_logprobs(gguf_path, prompts)  # llama.cpp, with leaf's AMX workaround
    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32).eval()
    kls, agree = [], 0
    for tokens, q_log in zip(ids, gguf_logprobs):
        with torch.no_grad():
            hf_logits = model(torch.tensor([tokens])).logits[0, -1].double()
        p_log = torch.log_softmax(hf_logits, -1).numpy()
        q = q_log[: p_log.shape[0]]
        kls.append(float((np.exp(p_log) * (p_log - q)).sum()))
        agree += int(p_log.argmax() == q.argmax())
    return sum(kls) / len(kls), agree


def is_converter_checkpoint(checkpoint: Path) -> bool:
    """A checkpoint of an architecture llama.cpp's converter makes leaf's GGUF from (Qwen3.5)."""
    from leaf_cli.models.converter import HF_ARCHITECTURES
    from leaf_cli.models.snapshot import read_architectures

    config = checkpoint / "config.json"
    return config.is_file() and any(a in HF_ARCHITECTURES for a in read_architectures(config))


def _has_mtp(checkpoint: Path) -> bool:
    """Whether the checkpoint still carries Qwen3.5's multi-token-prediction tensors (a trained
    Qwen3_5ForCausalLM saved by transformers drops them)."""
    names: list[str] = []
    for shard in checkpoint.glob("*.safetensors"):
        with shard.open("rb") as f:
            size = int.from_bytes(f.read(8), "little")
            names.extend(json.loads(f.read(size)))
    return any(n.startswith(("mtp.", "model.mtp.")) for n in names)


def convert_export(checkpoint: Path, out_dir: Path, quant: str, stem: str) -> ExportReport:
    """Qwen3.5: checkpoint → llama.cpp's converter (BF16) → quantizer → pull's checks → KL against the checkpoint."""
    from leaf_cli.models.converter import check_requirements, convert
    from leaf_cli.models.verify import verify_gguf

    check_requirements()
    bf16 = out_dir / f"{stem}-BF16.gguf"
    final = bf16 if quant == "bf16" else out_dir / f"{stem}-{quant_label(quant)}.gguf"
    for stale in (bf16, final):  # an export always reflects the checkpoint as it is now
        stale.unlink(missing_ok=True)
    convert(checkpoint, bf16, extra_args=() if _has_mtp(checkpoint) else ("--no-mtp",))
    if final != bf16:
        llama_quantize(bf16, final, quant)
    checked = verify_gguf(final, architecture="qwen35", hybrid=True)
    kl_bf16, _agree = kl_against_checkpoint(checkpoint, bf16)
    kl_final, agree = (kl_bf16, _agree) if final == bf16 else kl_against_checkpoint(checkpoint, final)
    return ExportReport(gguf=str(final), quant=quant, method="convert", architecture=checked.architecture,
                        hybrid=checked.hybrid, kl_unquantized=kl_bf16, kl_quantized=kl_final, top1_agree=agree,
                        prompts=len(DEFAULT_PROMPTS))


def export(checkpoint: Path, base_gguf: Path | None, out_dir: Path, quant: str = "q4_k_m",
           name: str | None = None) -> ExportReport:
    """Checkpoint → GGUF (converted for Qwen3.5, else written back into `base_gguf`) → quantized, verified
    against the checkpoint; optionally registered under `name`."""
    quant = check_quant(quant)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = name or checkpoint.name
    if is_converter_checkpoint(checkpoint):
        report = convert_export(checkpoint, out_dir, quant, stem)
    else:
        if base_gguf is None or not base_gguf.is_file():
            from leaf_cli.errors import LeafError

            raise LeafError(f"{checkpoint} is not a Qwen3.5 checkpoint, so it is written back into the GGUF it was "
                            "trained from: pass --base-gguf (no leaf_source.json names one)")
        report = _write_back_export(checkpoint, base_gguf, out_dir, quant, stem)
    if name is not None:
        from leaf_cli.models.registry import add_model

        add_model(Path(report.gguf), name=name)
        report.registered_as = name
    (out_dir / f"{stem}-export.json").write_text(report.model_dump_json(indent=2))
    return report


def _write_back_export(checkpoint: Path, base_gguf: Path, out_dir: Path, quant: str, stem: str) -> ExportReport:
    f16 = out_dir / f"{stem}-f16.gguf"
    final = out_dir / f"{stem}-{quant}.gguf"
    replaced, copied = write_back(checkpoint, base_gguf, f16)
    if quant == "f16":
        final = f16
    else:
        final.unlink(missing_ok=True)
        quantize(f16, final, quant)
    kl_f16, _ = kl_against_checkpoint(checkpoint, f16)
    kl_final, agree = kl_against_checkpoint(checkpoint, final)
    return ExportReport(gguf=str(final), quant=quant, tensors_replaced=replaced, tensors_copied=copied,
                        kl_unquantized=kl_f16, kl_quantized=kl_final, top1_agree=agree, prompts=len(DEFAULT_PROMPTS))


def base_gguf_of(checkpoint: Path) -> Path | None:
    """The GGUF a checkpoint was trained from, as the trainer records it in `leaf_source.json`."""
    source = checkpoint / "leaf_source.json"
    if source.is_file():
        gguf_path = json.loads(source.read_text()).get("gguf")
        return Path(gguf_path) if gguf_path else None
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="leaf train export", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="HF checkpoint folder (save_pretrained output)")
    parser.add_argument("--quant", default="q4_k_m", choices=sorted(QUANT_TYPES))
    parser.add_argument("--base-gguf", type=Path, help="for a policy trained from a GGUF: that GGUF "
                                                       "(default: leaf_source.json); Qwen3.5 needs none")
    parser.add_argument("--out", type=Path, help="output folder (default: CHECKPOINT/gguf)")
    parser.add_argument("--name", help="register the result under this model name (`leaf models add`)")
    args = parser.parse_args(argv)
    from leaf_cli.errors import LeafError

    if not (args.checkpoint / "config.json").is_file():
        parser.error(f"{args.checkpoint} is not a checkpoint folder (no config.json)")
    try:
        report = export(args.checkpoint, args.base_gguf or base_gguf_of(args.checkpoint),
                        args.out or args.checkpoint / "gguf", args.quant, args.name)
    except LeafError as exc:
        print(f"leaf: error: {exc}", file=sys.stderr)
        return 2
    print(report.model_dump_json(indent=2))
    print(f"{report.gguf}: {report.architecture or 'exported'}; next-token KL against the checkpoint "
          f"{report.kl_unquantized:.5f} unquantized, {report.kl_quantized:.5f} {report.quant} "
          f"(greedy agreement {report.top1_agree}/{report.prompts})", file=sys.stderr)
    ok = math.isfinite(report.kl_quantized)
    return 0 if ok else 1
