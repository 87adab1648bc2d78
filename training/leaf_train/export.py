"""`leaf train export`: a trained HF checkpoint back into a GGUF the CLI runs.

The policy starts from a GGUF (FrogNano's, or a test model's), so export writes *back* into that file's
layout: its metadata and tokenizer are copied verbatim, every tensor the checkpoint holds replaces the
base tensor (undoing the transforms transformers applied when it loaded the GGUF), and llama.cpp's own
quantizer makes the final type. Then the export is verified: next-token distributions of the GGUF in
llama.cpp against the checkpoint in transformers, on a few prompts, as a KL divergence.

Simplification: the architectures supported are those whose GGUF↔HF tensor transform we undo here
(`_TO_GGUF`), checked numerically against transformers' own loader on every export.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
from pydantic import BaseModel

QUANT_TYPES = {"f16": 1, "q8_0": 7, "q4_0": 2, "q4_1": 3, "q5_k_m": 17, "q4_k_m": 15, "q6_k": 18}
"""llama.cpp `llama_ftype` values for the quantizations leaf exports."""

DEFAULT_PROMPTS = (
    "def add(a, b):\n    return",
    "The capital of France is",
    "<|im_start|>user\nRead calc.py<|im_end|>\n<|im_start|>assistant\n",
)


class ExportReport(BaseModel):
    """What an export produced and how close it is to the checkpoint."""

    gguf: str
    quant: str
    tensors_replaced: int
    tensors_copied: int
    kl_unquantized: float
    kl_quantized: float
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
    """Quantize with llama.cpp's own quantizer (K-quants included), through llama-cpp-python.

    The quantizer prints a line per tensor from C; that goes to `dst` + `.log`, not the user's terminal.
    """
    import llama_cpp

    if quant not in QUANT_TYPES:
        raise ValueError(f"unknown quantization {quant!r}; choose from {', '.join(QUANT_TYPES)}")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = QUANT_TYPES[quant]
    with _native_output_to(dst.with_name(dst.name + ".log")):
        status = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), params)
    if status != 0 or not dst.is_file():
        raise RuntimeError(f"llama.cpp could not quantize {src} to {quant} (status {status})")


@contextlib.contextmanager
def _native_output_to(log: Path) -> Iterator[None]:
    """Point file descriptors 1 and 2 at `log` while C code runs (Python's sys.stdout cannot catch it)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with log.open("wb") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def next_token_kl(checkpoint: Path, gguf_path: Path, prompts: tuple[str, ...] = DEFAULT_PROMPTS) -> float:
    """Mean KL(checkpoint ‖ GGUF) of the next-token distribution after each prompt, same token ids for both."""
    import llama_cpp
    import torch
    from transformers import AutoModelForCausalLM

    from leaf_cli.llm.llama_runtime import load_llama

    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32).eval()
    llm, _info = load_llama(gguf_path, n_ctx=512)  # with leaf's AMX workaround, as the CLI runs it
    kls = []
    for prompt in prompts:
        ids = llm.tokenize(prompt.encode(), add_bos=True, special=True)
        llm.reset()
        llm.eval(ids)
        # Without logits_all, Llama.scores is not filled: read the last row from the context itself.
        last = np.ctypeslib.as_array(llama_cpp.llama_get_logits(llm.ctx), shape=(llm.n_vocab(),))
        gguf_logits = torch.tensor(last.astype(np.float32))
        with torch.no_grad():
            hf_logits = model(torch.tensor([ids])).logits[0, -1].float()
        p_log = torch.log_softmax(hf_logits, -1)
        q_log = torch.log_softmax(gguf_logits[: p_log.shape[0]], -1)
        kls.append(float((p_log.exp() * (p_log - q_log)).sum()))
    return sum(kls) / len(kls)


def export(checkpoint: Path, base_gguf: Path, out_dir: Path, quant: str = "q4_k_m",
           name: str | None = None) -> ExportReport:
    """Checkpoint → F16 write-back → quantized GGUF, verified against the checkpoint; optionally registered."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = name or checkpoint.name
    f16 = out_dir / f"{stem}-f16.gguf"
    final = out_dir / f"{stem}-{quant}.gguf"
    replaced, copied = write_back(checkpoint, base_gguf, f16)
    if quant == "f16":
        final = f16
    else:
        quantize(f16, final, quant)
    report = ExportReport(gguf=str(final), quant=quant, tensors_replaced=replaced, tensors_copied=copied,
                          kl_unquantized=next_token_kl(checkpoint, f16), kl_quantized=next_token_kl(checkpoint, final))
    if name is not None:
        from leaf_cli.models.registry import add_model

        add_model(final, name=name)
        report.registered_as = name
    (out_dir / f"{stem}-export.json").write_text(report.model_dump_json(indent=2))
    return report


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
    parser.add_argument("--base-gguf", type=Path, help="the GGUF the policy was trained from (default: leaf_source.json)")
    parser.add_argument("--out", type=Path, help="output folder (default: CHECKPOINT/gguf)")
    parser.add_argument("--name", help="register the result under this model name (`leaf models add`)")
    args = parser.parse_args(argv)
    base = args.base_gguf or base_gguf_of(args.checkpoint)
    if base is None or not base.is_file():
        parser.error("no base GGUF: pass --base-gguf (the checkpoint has no leaf_source.json naming one)")
    report = export(args.checkpoint, base, args.out or args.checkpoint / "gguf", args.quant, args.name)
    print(report.model_dump_json(indent=2))
    ok = math.isfinite(report.kl_quantized)
    return 0 if ok else 1
