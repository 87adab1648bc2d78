"""One training step: rewards → group advantages → token batches → DPPO (or decoupled PPO) → AdamW.

The loss is a token mean over every trainable token of the step (the paper's and verl's |T|): each
micro-batch's sum is divided by the step's token count, summed over the data-parallel ranks. Episodes whose
advantage is 0 (flat groups) are counted in |T| but left out of the forward pass (no gradient either way).
"""

from __future__ import annotations

import time
from typing import Any

import torch

from leaf_train.rl import losses
from leaf_train.rl.advantages import group_advantages
from leaf_train.rl.config import RLConfig
from leaf_train.rl.samples import Batch, TokenSample, collate


# Above this many logits (batch × tokens × vocabulary) the log-probabilities are computed in slices of the
# sequence: Qwen3.5's 248,320-entry vocabulary makes full logits 1 MB per token in float32 (README: Memory).
FULL_LOGITS_LIMIT = 2 ** 27


def token_logprobs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   temperature: float = 1.0, chunk: int = 512, limit: int = FULL_LOGITS_LIMIT) -> torch.Tensor:
    """log π(ids[t] | ids[<t]) for every position t ≥ 1 (position 0 is 0), as float32 `[batch, tokens]`.

    When the logits would exceed `limit` entries, the decoder runs once and the output head plus log-softmax
    run on `chunk` positions at a time under activation checkpointing, so at most one slice of logits is
    alive in forward and in backward; same numbers, memory linear in the sequence instead of × vocabulary."""
    width = model.get_output_embeddings().weight.shape[0]
    config = getattr(model, "config", None)
    plain_head = getattr(config, "final_logit_softcapping", None) is None and getattr(config, "logit_scale", None) is None
    if input_ids.numel() * width <= limit or not plain_head:
        logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits[:, :-1]
        return torch.nn.functional.pad(_picked(logits, input_ids[:, 1:], temperature), (1, 0))
    from torch.utils.checkpoint import checkpoint

    hidden = model.get_decoder()(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    head = model.get_output_embeddings()
    parts = []
    for start in range(0, input_ids.shape[1] - 1, chunk):
        stop = min(start + chunk, input_ids.shape[1] - 1)
        parts.append(checkpoint(lambda h, t: _picked(head(h), t, temperature), hidden[:, start:stop],
                                input_ids[:, start + 1:stop + 1], use_reentrant=False))
    return torch.nn.functional.pad(torch.cat(parts, dim=1), (1, 0))


def _picked(logits: torch.Tensor, targets: torch.Tensor, temperature: float) -> torch.Tensor:
    logits = logits.float()
    if temperature > 0 and temperature != 1.0:
        logits = logits / temperature
    return logits.gather(-1, targets[..., None])[..., 0] - torch.logsumexp(logits, dim=-1)


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
        rewards = [s.reward for s in samples]
        lengths = None
        if self.cfg.loss.length_penalty:
            lengths = losses.log_length_penalty(torch.tensor([float(s.length) for s in samples]),
                                                self.cfg.loss.length_penalty).tolist()
        adv, adv_stats = group_advantages(rewards, [s.task_id for s in samples],
                                          normalize_std=self.cfg.loss.normalize_std, std=self.cfg.loss.group_std,
                                          length_terms=lengths)
        staleness = [self.version - s.oldest_version() for s in samples]
        metrics: dict[str, float] = {
            "reward_mean": sum(rewards) / len(rewards), "groups": adv_stats.groups,
            "zero_variance_groups": adv_stats.zero_variance_groups,
            "episode_tokens_mean": sum(s.length for s in samples) / len(samples),
            "staleness_mean": sum(staleness) / len(staleness), "staleness_max": max(staleness),
        }
        frozen = self.cfg.optim.lr == 0.0 and self._world() == 1  # an lr-0 step cannot move the weights
        if not frozen and (any(a != 0.0 for a in adv) or self._world() > 1):  # every rank joins the collectives
            metrics.update(self._update(samples, adv))
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
        """One optimizer update. The loss is Σ over the minibatch's kept terms / |T|, |T| = every trainable token
        of the minibatch on every rank, zero-advantage episodes included (they have no gradient, so they are
        counted but not forwarded). Each micro-batch's sum is divided by |T| / world: data-parallel backends
        average gradients over the ranks, which restores the global token mean."""
        world = self._world()
        total = self._global_sum(float(sum(s.length for s in samples)))
        live = [(s, a) for s, a in zip(samples, advantages) if a != 0.0] or [(samples[0], 0.0)]
        size = self.cfg.optim.micro_batch_size
        micro = [collate([s for s, _ in live[i:i + size]], [a for _, a in live[i:i + size]], self.pad_id)
                 for i in range(0, len(live), size)]
        here = sum(b.tokens for b in micro)
        proximal = [self._proximal(b) for b in micro] if self.cfg.loss.kind == "decoupled_ppo" else [None] * len(micro)
        sums: dict[str, float] = {}
        self.model.train()
        for batch, prox in zip(micro, proximal):
            loss, stats = self._loss(batch, prox, num_tokens=max(total, 1.0) / world)
            self.accelerator.backward(loss) if self.accelerator is not None else loss.backward()
            sums["loss"] = sums.get("loss", 0.0) + float(loss.detach())
            share = batch.tokens / max(here, 1)  # the stats are means over this rank's forwarded tokens
            for name, value in stats.items():
                sums[name] = sums.get(name, 0.0) + float(value) * share
        sums["grad_norm"] = self._clip()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        sums["tokens"] = total
        return sums

    def _loss(self, batch: Batch, proximal: torch.Tensor | None,
              num_tokens: float) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        device = self._device()
        logp = token_logprobs(self.model, batch.input_ids.to(device), batch.attention_mask.to(device),
                              self.cfg.rollout.temperature)
        mask, behav = batch.loss_mask.to(device), batch.behaviour_logp.to(device)
        adv = batch.advantages.to(device)
        lc = self.cfg.loss
        if lc.kind == "decoupled_ppo":
            return losses.decoupled_ppo_loss(logp, proximal.to(device), behav, adv, mask, clip_low=lc.clip_low,
                                             clip_high=lc.clip_high, behaviour_cap=lc.behaviour_cap,
                                             num_tokens=num_tokens)
        keep = None
        if lc.stale.enabled:
            staleness = (self.version - batch.versions.to(device)).clamp(min=0) * mask.long()
            keep = losses.stale_keep(logp, behav, adv, staleness, min_staleness=lc.stale.min_staleness,
                                     divergence=lc.stale.divergence, threshold=lc.stale.threshold)
        return losses.dppo_loss(logp, behav, adv, mask, divergence=lc.divergence, delta_low=lc.delta_low,
                                delta_high=lc.delta_high, is_cap=lc.is_cap, keep=keep, num_tokens=num_tokens)

    def _proximal(self, batch: Batch) -> torch.Tensor:
        """log π_prox: the current weights before this minibatch's update, without gradient."""
        device = self._device()
        self.model.eval()
        with torch.no_grad():
            return token_logprobs(self.model, batch.input_ids.to(device), batch.attention_mask.to(device),
                                  self.cfg.rollout.temperature).cpu()

    def _world(self) -> int:
        return int(getattr(self.accelerator, "num_processes", 1) or 1)

    def _global_sum(self, value: float) -> float:
        """`value` summed over the data-parallel ranks (itself on one process)."""
        if self._world() == 1:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self._device())
        return float(self.accelerator.reduce(t, reduction="sum")[0])

    def _clip(self) -> float:
        params = [p for p in self.model.parameters() if p.requires_grad]
        limit = self.cfg.optim.grad_clip if self.cfg.optim.grad_clip > 0 else float("inf")
        if self.accelerator is not None:
            return float(self.accelerator.clip_grad_norm_(params, limit))
        return float(torch.nn.utils.clip_grad_norm_(params, limit))

    def _device(self) -> torch.device:
        return next(self.model.parameters()).device
