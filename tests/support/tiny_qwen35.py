"""A tiny random-weight Qwen3.5 checkpoint in the layout of the real `microsoft/FrogNano-4B-2609` repository.

FrogNano-4B cannot run on the test machines, so the tests build a model of its exact architecture instead:
`Qwen3_5ForConditionalGeneration` (the text model in the 3:1 Gated DeltaNet / gated attention pattern, a
vision tower, one multi-token-prediction layer under `mtp.*`), bf16 safetensors in two shards with an index,
Qwen3.5's special tokens at their real ids, and the real chat template. Only the sizes are small.

The tokenizer: llama.cpp's converter accepts a BPE tokenizer only when the token ids of a fixed test text have
a fingerprint it knows. Qwen3.5's own vocabulary is not available here, so the regular tokens and merges are
Qwen2's (151,643 tokens, from the vocab-only GGUF in the llama.cpp sources that the converter came with); with
Qwen3.5's pre-tokenizer they reproduce the fingerprint llama.cpp files under `qwen2`. The ids in between stay
unused, as in the real 248,320-entry vocabulary.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

REPO_ID = "microsoft/FrogNano-4B-2609"
VOCAB_SIZE = 248_320
REGULAR_TOKENS = 151_643  # Qwen2's byte-level BPE tokens; its special tokens start here
SPECIAL_TOKENS = [  # Qwen3.5's, in order from id 248044 (its tokenizer_config.json)
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
]
FIRST_SPECIAL = 248_044
# Tokens the chat template writes as text; Qwen marks them non-special so they survive decoding.
NOT_SPECIAL = {"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>",
               "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"}
PRETOKENIZE_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
                     r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

TEXT_CONFIG: dict[str, Any] = {
    "vocab_size": VOCAB_SIZE, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
    "layer_types": ["linear_attention"] * 3 + ["full_attention"], "full_attention_interval": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 16, "linear_value_head_dim": 16,
    "linear_num_key_heads": 2, "linear_num_value_heads": 4,  # fewer K than V heads, as in the 4B
    "max_position_embeddings": 262_144, "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
    "mtp_num_hidden_layers": 1, "eos_token_id": FIRST_SPECIAL + 2,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10_000_000.0, "partial_rotary_factor": 0.25,
                        "mrope_section": [2, 1, 1], "mrope_interleaved": True},
}
# Embeddings small enough that a token's own logit does not drown the rest (they are tied to the output).
EMBEDDING_STD, WEIGHT_STD = 0.35, 0.15
VISION_CONFIG: dict[str, Any] = {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
                                 "out_hidden_size": 64, "patch_size": 16, "spatial_merge_size": 2,
                                 "temporal_patch_size": 2, "num_position_embeddings": 64}


def build_checkpoint(out: Path, vocab_gguf: Path, chat_template: str, seed: int = 0) -> Path:
    """Write the checkpoint folder `out` (config, tokenizer, two safetensors shards + index) and return it.

    Written directly (numpy and the tokenizers library only), so it takes a second or two; the tests that load
    it with transformers check that transformers finds exactly these tensors.
    """
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config_json(), indent=2))
    _write_generation_config(out)
    _write_tokenizer(out, vocab_gguf, chat_template)
    _write_weights(out, seed)
    return out


def config_json() -> dict[str, Any]:
    """config.json as transformers 5 writes it for `Qwen3_5ForConditionalGeneration` (model_type qwen3_5)."""
    text = {**TEXT_CONFIG, "model_type": "qwen3_5_text", "hidden_act": "silu", "attention_bias": False,
            "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True, "bos_token_id": None,
            "pad_token_id": None}
    vision = {**VISION_CONFIG, "model_type": "qwen3_5_vision", "hidden_act": "gelu_pytorch_tanh", "in_channels": 3,
              "initializer_range": 0.02, "rope_parameters": {"rope_theta": 10000.0, "rope_type": "axial"}}
    ids = {token: FIRST_SPECIAL + i for i, token in enumerate(SPECIAL_TOKENS)}
    return {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "dtype": "bfloat16",
            "tie_word_embeddings": True, "text_config": text, "vision_config": vision,
            "image_token_id": ids["<|image_pad|>"], "video_token_id": ids["<|video_pad|>"],
            "vision_start_token_id": ids["<|vision_start|>"], "vision_end_token_id": ids["<|vision_end|>"]}


def _write_generation_config(out: Path) -> None:
    im_end, eot = FIRST_SPECIAL + 2, FIRST_SPECIAL
    (out / "generation_config.json").write_text(json.dumps(
        {"do_sample": True, "eos_token_id": [im_end, eot], "pad_token_id": eot, "temperature": 0.6,
         "top_k": 20, "top_p": 0.95}, indent=2))


def tensor_shapes() -> dict[str, tuple[int, ...]]:
    """Every tensor of the checkpoint, named as the real repository names them (no lm_head: tied)."""
    t, v = TEXT_CONFIG, VISION_CONFIG
    hidden, inter, head = t["hidden_size"], t["intermediate_size"], t["head_dim"]
    q_heads, kv_heads = t["num_attention_heads"], t["num_key_value_heads"]
    k_dim = t["linear_num_key_heads"] * t["linear_key_head_dim"]
    v_dim = t["linear_num_value_heads"] * t["linear_value_head_dim"]
    mlp = {"mlp.gate_proj.weight": (inter, hidden), "mlp.up_proj.weight": (inter, hidden),
           "mlp.down_proj.weight": (hidden, inter), "input_layernorm.weight": (hidden,),
           "post_attention_layernorm.weight": (hidden,)}
    attention = {"self_attn.q_proj.weight": (2 * q_heads * head, hidden),  # queries and their output gate
                 "self_attn.k_proj.weight": (kv_heads * head, hidden), "self_attn.v_proj.weight": (kv_heads * head, hidden),
                 "self_attn.o_proj.weight": (hidden, q_heads * head), "self_attn.q_norm.weight": (head,),
                 "self_attn.k_norm.weight": (head,)}
    delta = {"linear_attn.in_proj_qkv.weight": (2 * k_dim + v_dim, hidden), "linear_attn.in_proj_z.weight": (v_dim, hidden),
             "linear_attn.in_proj_a.weight": (t["linear_num_value_heads"], hidden),
             "linear_attn.in_proj_b.weight": (t["linear_num_value_heads"], hidden),
             "linear_attn.conv1d.weight": (2 * k_dim + v_dim, 1, t["linear_conv_kernel_dim"]),
             "linear_attn.A_log": (t["linear_num_value_heads"],), "linear_attn.dt_bias": (t["linear_num_value_heads"],),
             "linear_attn.norm.weight": (t["linear_value_head_dim"],), "linear_attn.out_proj.weight": (hidden, v_dim)}
    shapes: dict[str, tuple[int, ...]] = {"model.language_model.embed_tokens.weight": (VOCAB_SIZE, hidden),
                                          "model.language_model.norm.weight": (hidden,)}
    for i, kind in enumerate(t["layer_types"]):
        mixer = delta if kind == "linear_attention" else attention
        shapes.update({f"model.language_model.layers.{i}.{k}": s for k, s in {**mixer, **mlp}.items()})
    shapes.update({f"mtp.layers.0.{k}": s for k, s in {**attention, **mlp}.items()})
    shapes.update({"mtp.fc.weight": (hidden, 2 * hidden), "mtp.pre_fc_norm_embedding.weight": (hidden,),
                   "mtp.pre_fc_norm_hidden.weight": (hidden,), "mtp.norm.weight": (hidden,)})
    vh, merged = v["hidden_size"], v["hidden_size"] * v["spatial_merge_size"] ** 2
    shapes.update({"model.visual.patch_embed.proj.weight": (vh, 3, v["temporal_patch_size"], v["patch_size"], v["patch_size"]),
                   "model.visual.patch_embed.proj.bias": (vh,), "model.visual.pos_embed.weight": (v["num_position_embeddings"], vh),
                   "model.visual.merger.norm.weight": (vh,), "model.visual.merger.norm.bias": (vh,),
                   "model.visual.merger.linear_fc1.weight": (merged, merged), "model.visual.merger.linear_fc1.bias": (merged,),
                   "model.visual.merger.linear_fc2.weight": (v["out_hidden_size"], merged),
                   "model.visual.merger.linear_fc2.bias": (v["out_hidden_size"],)})
    for b in range(v["depth"]):
        block = {"attn.qkv.weight": (3 * vh, vh), "attn.qkv.bias": (3 * vh,), "attn.proj.weight": (vh, vh),
                 "attn.proj.bias": (vh,), "mlp.linear_fc1.weight": (v["intermediate_size"], vh),
                 "mlp.linear_fc1.bias": (v["intermediate_size"],), "mlp.linear_fc2.weight": (vh, v["intermediate_size"]),
                 "mlp.linear_fc2.bias": (vh,), "norm1.weight": (vh,), "norm1.bias": (vh,), "norm2.weight": (vh,),
                 "norm2.bias": (vh,)}
        shapes.update({f"model.visual.blocks.{b}.{k}": s for k, s in block.items()})
    return shapes


def _write_weights(out: Path, seed: int) -> None:
    """Random bf16 weights for every tensor, in two shards plus the index, as the real repository has."""
    rng = np.random.default_rng(seed)
    names = sorted(tensor_shapes().items())
    half = len(names) // 2
    shards = [names[:half], names[half:]]
    weight_map, total = {}, 0
    for i, shard in enumerate(shards, start=1):
        file = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        total += _save_bf16(out / file, {name: _init(name, shape, rng) for name, shape in shard})
        weight_map.update({name: file for name, _ in shard})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))


def _init(name: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if name.endswith("A_log"):
        return np.log(rng.uniform(1, 16, shape)).astype(np.float32)
    if len(shape) == 1:  # norms (Qwen3.5 stores them zero-centred) and biases: small offsets
        return (0.1 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
    std = EMBEDDING_STD if "embed_tokens" in name else WEIGHT_STD
    return (std * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)


def _save_bf16(path: Path, tensors: dict[str, np.ndarray]) -> int:
    """A safetensors file of bf16 tensors (8-byte header size, JSON header, data), rounded to nearest even."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, array in tensors.items():
        bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32)
        raw = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes()
        header[name] = {"dtype": "BF16", "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        for raw in blobs:
            f.write(raw)
    return offset


def _write_tokenizer(out: Path, vocab_gguf: Path, chat_template: str) -> None:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import BPE

    arrays = gguf_string_arrays(vocab_gguf, {"tokenizer.ggml.tokens", "tokenizer.ggml.merges"})
    vocab = {token: i for i, token in enumerate(arrays["tokenizer.ggml.tokens"][:REGULAR_TOKENS])}
    # Qwen3.5's special tokens sit in the vocabulary at their real ids; the ids in between stay unused.
    vocab.update({token: FIRST_SPECIAL + i for i, token in enumerate(SPECIAL_TOKENS)})
    merges = [tuple(m.split(" ", 1)) for m in arrays["tokenizer.ggml.merges"]]
    tokenizer = Tokenizer(BPE(vocab=vocab, merges=merges, unk_token=None, fuse_unk=False, byte_fallback=False))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    data = json.loads(tokenizer.to_str())
    for token in data["added_tokens"]:
        token["special"] = token["content"] not in NOT_SPECIAL
    (out / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False))
    regular = {token: i for token, i in vocab.items() if i < REGULAR_TOKENS}
    (out / "vocab.json").write_text(json.dumps(regular, ensure_ascii=False))
    (out / "merges.txt").write_text("#version: 0.2\n" + "\n".join(" ".join(m) for m in merges) + "\n")
    decoder = {str(t["id"]): {"content": t["content"], "lstrip": False, "normalized": False, "rstrip": False,
                              "single_word": False, "special": t["special"]} for t in data["added_tokens"]}
    (out / "tokenizer_config.json").write_text(json.dumps({
        "add_prefix_space": False, "added_tokens_decoder": decoder, "bos_token": None, "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>", "errors": "replace", "model_max_length": 262_144, "pad_token": "<|endoftext|>",
        "split_special_tokens": False, "tokenizer_class": "Qwen2Tokenizer", "unk_token": None}, indent=2))
    (out / "chat_template.jinja").write_text(chat_template)


def gguf_string_arrays(path: Path, keys: set[str]) -> dict[str, list[str]]:
    """The string-array metadata `keys` of a GGUF file (gguf-py's reader takes ~10 s on a 150k vocabulary)."""
    data = path.read_bytes()
    if data[:4] != b"GGUF":
        raise ValueError(f"{path} is not a GGUF file")
    kv_count = struct.unpack_from("<Q", data, 16)[0]
    scalar = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    pos, found = 24, {}

    def string(at: int) -> tuple[str, int]:
        n = struct.unpack_from("<Q", data, at)[0]
        return data[at + 8:at + 8 + n].decode("utf-8"), at + 8 + n

    for _ in range(kv_count):
        key, pos = string(pos)
        kind = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        if kind == 8:
            _, pos = string(pos)
        elif kind == 9:
            item, count = struct.unpack_from("<IQ", data, pos)
            pos += 12
            if item != 8:
                pos += scalar[item] * count
                continue
            values = []
            for _ in range(count):
                value, pos = string(pos)
                values.append(value)
            if key in keys:
                found[key] = values
        else:
            pos += scalar[kind]
    return found
