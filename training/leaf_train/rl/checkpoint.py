"""Checkpoint and resume: model weights, optimizer, step, policy version, RNG states, data position.

A checkpoint is a folder `step_NNNNNN/` written under a temporary name and renamed when complete, so a
crash mid-save never leaves a checkpoint that looks whole.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import torch


def save_checkpoint(root: Path, step: int, model: Any, optimizer: torch.optim.Optimizer,
                    state: dict[str, Any], accelerator: Any = None) -> Path:
    """Write checkpoint `step` under `root`; `state` holds the trainer's counters (JSON-serialisable)."""
    final = root / f"step_{step:06d}"
    partial = root / f"step_{step:06d}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    unwrapped = accelerator.unwrap_model(model) if accelerator is not None else model
    weights = accelerator.get_state_dict(model) if accelerator is not None else None
    unwrapped.save_pretrained(partial / "model", state_dict=weights)
    torch.save(optimizer.state_dict(), partial / "optimizer.pt")
    torch.save({"torch": torch.get_rng_state(), "python": random.getstate(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}, partial / "rng.pt")
    (partial / "state.json").write_text(json.dumps({"step": step, **state}, indent=2), encoding="utf-8")
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    return final


def latest_checkpoint(root: Path) -> Path | None:
    """The newest complete checkpoint folder under `root`, or None."""
    found = sorted(p for p in root.glob("step_*") if p.is_dir() and not p.name.endswith(".partial"))
    return found[-1] if found else None


def load_checkpoint(path: Path, model: Any, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """Restore weights, optimizer and RNG from `path` into live objects; return the saved state dict."""
    from safetensors.torch import load_file

    folder = path / "model"
    if (folder / "adapter_model.safetensors").is_file():
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(model, load_file(folder / "adapter_model.safetensors"))
    else:
        weights = {}
        for shard in sorted(folder.glob("*.safetensors")):
            weights.update(load_file(shard))
        missing, _ = model.load_state_dict(weights, strict=False)
        tied = {"lm_head.weight"}  # tied to the embeddings; save_pretrained leaves it out
        if set(missing) - tied:
            # save_pretrained writes some models under their published names (Qwen3_5ForCausalLM as
            # model.language_model.*, the ConditionalGeneration layout); from_pretrained maps them back.
            fresh = type(model).from_pretrained(folder, dtype=next(model.parameters()).dtype)
            missing, _ = model.load_state_dict(fresh.state_dict(), strict=False)
            del fresh
        if set(missing) - tied:
            raise ValueError(f"checkpoint {path} lacks weights: {sorted(set(missing) - tied)[:5]}")
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", weights_only=False))
    rng = torch.load(path / "rng.pt", weights_only=False)
    torch.set_rng_state(rng["torch"])
    random.setstate(rng["python"])
    if rng.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    return json.loads((path / "state.json").read_text(encoding="utf-8"))
