"""One training step: rewards → group advantages → token batches → DPPO (or decoupled PPO) → AdamW.

The loss is a token mean over every trainable token of the step: with gradient accumulation each
micro-batch's mean is weighted by its share of the step's tokens. Groups whose rewards are all equal have
zero advantage everywhere; they are left out of the forward pass (no gradient either way) and counted.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from leaf_train.rl import losses
from leaf_train.rl.advantages import group_advantages
from leaf_train.rl.config import RLConfig
from leaf_train.rl.samples import Batch, TokenSample, collate


def token_logprobs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   temperature: float = 1.0) -> torch.Tensor:
    """log π(ids[t] | ids[<t]) for every position t ≥ 1 (position 0 is 0), as float32 `[batch, tokens]`."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits[:, :-1].float()
    if temperature > 0 and temperature != 1.0:
        logits = logits / temperature
    targets = input_ids[:, 1:]
    picked = logits.gather(-1, targets[..., None])[..., 0] - torch.logsumexp(logits, dim=-1)
    return torch.nn.functional.pad(picked, (1, 0))


class Trainer:
    """Owns the policy, the optimizer and the policy version (= training steps done)."""

    def __init__(self, cfg: RLConfig, model: Any, optimizer: torch.optim.Optimizer, pad_id: int,
                 accelerator: Any = None) -> None:
        self.cfg, self.model, self.optimizer, self.pad_id = cfg, model, optimizer, pad_id
        self.accelerator = accelerator
        self.version = 0

    def step(self, samples: list[TokenSample]) -> dict[str, float]:
        """Train on one rollout batch; returns the step's metrics. Advances `version` by one."""
        began = time.monotonic()
        rewards = torch.tensor([s.reward for s in samples], dtype=torch.float32)
        shaped = rewards.clone()
        if self.cfg.loss.length_penalty:
            lengths = torch.tensor([s.length for s in samples], dtype=torch.float32)
            shaped = shaped + losses.log_length_penalty(lengths, self.cfg.loss.length_penalty)
        adv, adv_stats = group_advantages(shaped.tolist(), [s.task_id for s in samples],
                                          normalize_std=self.cfg.loss.normalize_std)
        staleness = [self.version - s.oldest_version() for s in samples]
        metrics: dict[str, float] = {
            "reward_mean": float(rewards.mean()), "groups": adv_stats.groups,
            "zero_variance_groups": adv_stats.zero_variance_groups,
            "episode_tokens_mean": sum(s.length for s in samples) / len(samples),
            "staleness_mean": sum(staleness) / len(staleness), "staleness_max": max(staleness),
        }
        live = [(s, a) for s, a in zip(samples, adv) if a != 0.0]
        if live:
            metrics.update(self._update([s for s, _ in live], [a for _, a in live]))
        self.version += 1
        metrics["train_seconds"] = time.monotonic() - began
        return metrics

    def _update(self, samples: list[TokenSample], advantages: list[float]) -> dict[str, float]:
        parts = max(1, min(self.cfg.optim.minibatches, len(samples)))
        totals: dict[str, float] = {}
        for k in range(parts):
            chunk = slice(k * len(samples) // parts, (k + 1) * len(samples) // parts)
            stats = self._minibatch(samples[chunk], advantages[chunk])
            for name, value in stats.items():
                totals[name] = totals.get(name, 0.0) + value / parts
        return totals

    def _minibatch(self, samples: list[TokenSample], advantages: list[float]) -> dict[str, float]:
        size = self.cfg.optim.micro_batch_size
        micro = [collate(samples[i:i + size], advantages[i:i + size], self.pad_id)
                 for i in range(0, len(samples), size)]
        total = sum(b.tokens for b in micro)
        proximal = [self._proximal(b) for b in micro] if self.cfg.loss.kind == "decoupled_ppo" else [None] * len(micro)
        sums: dict[str, float] = {}
        self.model.train()
        for batch, prox in zip(micro, proximal):
            loss, stats = self._loss(batch, prox)
            share = batch.tokens / max(total, 1)
            scaled = loss * share
            self.accelerator.backward(scaled) if self.accelerator is not None else scaled.backward()
            sums["loss"] = sums.get("loss", 0.0) + float(loss.detach()) * share
            for name, value in stats.items():
                sums[name] = sums.get(name, 0.0) + float(value) * share
        sums["grad_norm"] = self._clip()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        sums["tokens"] = float(total)
        return sums

    def _loss(self, batch: Batch, proximal: torch.Tensor | None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        device = self._device()
        logp = token_logprobs(self.model, batch.input_ids.to(device), batch.attention_mask.to(device),
                              self.cfg.rollout.temperature)
        mask, behav = batch.loss_mask.to(device), batch.behaviour_logp.to(device)
        adv = batch.advantages.to(device)
        lc = self.cfg.loss
        if lc.kind == "decoupled_ppo":
            return losses.decoupled_ppo_loss(logp, proximal.to(device), behav, adv, mask, clip_low=lc.clip_low,
                                             clip_high=lc.clip_high, behaviour_cap=lc.behaviour_cap)
        keep = None
        if lc.stale.enabled:
            staleness = (self.version - batch.versions.to(device)).clamp(min=0) * mask.long()
            keep = losses.stale_keep(logp, behav, adv, staleness, min_staleness=lc.stale.min_staleness,
                                     divergence=lc.stale.divergence, threshold=lc.stale.threshold)
        return losses.dppo_loss(logp, behav, adv, mask, divergence=lc.divergence, delta_low=lc.delta_low,
                                delta_high=lc.delta_high, is_cap=lc.is_cap, keep=keep)

    def _proximal(self, batch: Batch) -> torch.Tensor:
        """log π_prox: the current weights before this minibatch's update, without gradient."""
        device = self._device()
        self.model.eval()
        with torch.no_grad():
            return token_logprobs(self.model, batch.input_ids.to(device), batch.attention_mask.to(device),
                                  self.cfg.rollout.temperature).cpu()

    def _clip(self) -> float:
        params = [p for p in self.model.parameters() if p.requires_grad]
        limit = self.cfg.optim.grad_clip if self.cfg.optim.grad_clip > 0 else float("inf")
        if self.accelerator is not None:
            return float(self.accelerator.clip_grad_norm_(params, limit))
        return float(torch.nn.utils.clip_grad_norm_(params, limit))

    def _device(self) -> torch.device:
        return next(self.model.parameters()).device
