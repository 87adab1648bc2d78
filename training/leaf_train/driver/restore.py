"""Consolidation: restore tool-use behaviours that faded, by rejection-sampling fine-tuning (RFT).

Lost behaviours are those whose rate at the iteration's starting policy fell more than `tolerance` below
their best rate at an earlier checkpoint (behaviours.lost_behaviours). The restore set is the successful
(resolved) trajectories of earlier checkpoints that show a lost behaviour, as the exact token ids their
engine sampled (no re-tokenization). RFT is a token-mean cross-entropy on the sampled tokens; it is mixed
into the iteration's RL with a weight: after every validation chunk of M RL steps, round(weight · M) RFT
steps (at least one) update the chunk's checkpoint before it is validated and RL continues from it.

Simplification: the RFT optimizer is its own AdamW (fresh per chunk); the RL optimizer state is untouched.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any, Callable

from leaf_train.driver.behaviours import Episode, checkpoint_stats, lost_behaviours, run_episodes, stats_table
from leaf_train.driver.config import ConsolidationConfig
from leaf_train.rl.config import RLConfig


def eval_runs(out: Path, iterations: range) -> list[Path]:
    """The eval run folders of the given iterations, in order (one per validated checkpoint)."""
    runs = []
    for k in iterations:
        runs += sorted(p for p in (out / f"iteration-{k}" / "eval").glob("step_*") if (p / "results.jsonl").is_file())
    return runs


def shows(ep: Episode, behaviour: str) -> bool:
    """Whether an episode demonstrates a behaviour."""
    if behaviour == "validate_before_answer":
        return ep.validated_before_answer
    if behaviour == "edit_share":
        return ep.edits > 0 and ep.writes == 0
    raise ValueError(f"unknown behaviour {behaviour!r}")


def restore_examples(runs: list[Path], lost: dict[str, float], limit: int, seed: int = 0) -> list[dict[str, Any]]:
    """Resolved episodes of `runs` showing a lost behaviour, with their sampled token ids and loss mask."""
    from leaf_cli.agent.trajectory import load

    picked = []
    for run in runs:
        for ep in run_episodes(run):
            kept = [b for b in lost if shows(ep, b)]
            if not ep.resolved or not kept:
                continue
            log = load(Path(ep.path)).token_log
            if log is None or not any(log.mask):
                continue
            picked.append({"source": ep.path, "instance_id": ep.instance_id, "behaviours": kept,
                           "ids": list(log.ids), "loss_mask": list(log.mask)})
    random.Random(seed).shuffle(picked)
    return picked[:limit]


def rft_steps(model_dir: Path, base_dir: Path, examples: list[dict[str, Any]], steps: int, cfg: ConsolidationConfig,
              seed: int = 0) -> list[float]:
    """`steps` AdamW steps of token-mean cross-entropy on `examples`' sampled tokens; the checkpoint's
    weights are replaced atomically. Returns the loss of each step."""
    import torch
    from transformers import AutoModelForCausalLM

    from leaf_train.rl.trainer import token_logprobs

    adapters = (model_dir / "adapter_config.json").is_file()
    if adapters:
        from peft import PeftModel

        model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir), model_dir, is_trainable=True)
    else:
        model = AutoModelForCausalLM.from_pretrained(model_dir)
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.lr)
    rng, losses = random.Random(seed), []
    for _ in range(steps):
        batch = rng.sample(examples, min(cfg.micro_batch_size, len(examples)))
        width = max(len(e["ids"]) for e in batch)
        ids = torch.tensor([e["ids"] + [0] * (width - len(e["ids"])) for e in batch])
        attn = torch.tensor([[1] * len(e["ids"]) + [0] * (width - len(e["ids"])) for e in batch])
        mask = torch.tensor([e["loss_mask"] + [0] * (width - len(e["ids"])) for e in batch], dtype=torch.float32)
        loss = -(token_logprobs(model, ids, attn) * mask).sum() / mask.sum().clamp(min=1)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
    partial = model_dir.with_name(model_dir.name + ".rft")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    old = model_dir.with_name(model_dir.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    os.rename(model_dir, old)
    os.rename(partial, model_dir)
    shutil.rmtree(old, ignore_errors=True)
    return losses


def restore_hook(cfg: ConsolidationConfig, rl: RLConfig, out: Path, iteration: int, base_dir: Path,
                 folder: Path) -> tuple[Callable[[Path, int], None] | None, dict[str, Any]]:
    """Measure, find lost behaviours, build the restore set; the hook RFTs each chunk's checkpoint.

    Returns (hook or None when nothing was lost or nothing can restore it, the report for summary.md)."""
    earlier = [checkpoint_stats(r) for r in eval_runs(out, range(1, iteration))]
    current = checkpoint_stats(folder / "eval" / "step_000000")
    lost = lost_behaviours(earlier, current, cfg.tolerance)
    examples = restore_examples(eval_runs(out, range(1, iteration)), lost, cfg.max_examples, rl.seed) if lost else []
    target = folder / "consolidation"
    target.mkdir(parents=True, exist_ok=True)
    with (target / "restore.jsonl").open("w", encoding="utf-8") as f:
        for e in examples:
            f.write(json.dumps(e) + "\n")
    report = {"lost": lost, "examples": len(examples), "weight": cfg.weight,
              "text": stats_table(earlier + [current]) + f"\nlost behaviours: {lost or 'none'}; "
                      f"restore set: {len(examples)} trajectories"}
    if not examples:
        return None, report
    losses_path = target / "rft.jsonl"

    def after_chunk(checkpoint: Path, step: int) -> None:
        steps = max(1, round(cfg.weight * _chunk(checkpoint, step)))
        losses = rft_steps(checkpoint / "model", base_dir, examples, steps, cfg, seed=rl.seed + step)
        with losses_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"after_step": step, "rft_steps": steps, "loss": losses}) + "\n")

    return after_chunk, report


def _chunk(checkpoint: Path, step: int) -> int:
    """RL steps since the previous checkpoint (the chunk this RFT is mixed into)."""
    earlier = [int(p.name.split("_")[1]) for p in checkpoint.parent.glob("step_*") if p.name[5:].isdigit()]
    before = max((s for s in earlier if s < step), default=0)
    return step - before
