"""Policy-gradient losses as pure tensor functions: DPPO, its stale-trajectory mask, decoupled PPO.

Every tensor is `[batch, tokens]` and aligned on the *target* token: `logp[b, t]` is log π_θ(y_t | y_<t) of
token t of sample b. `loss_mask` is 1 on the tokens the policy sampled, 0 elsewhere. Advantages are already
broadcast to tokens. Nothing here reads a config, calls `.item()` or knows about ranks: the trainer does.

References: Qi et al. 2026, "Rethinking the Trust Region in LLM Reinforcement Learning" (arXiv 2602.04879,
Divergence PPO; code sail-sg/Stable-RL, verl `dppo_tv`/`dppo_kl`); Hilton et al. 2021, "Batch size-invariance
for policy optimization" (arXiv 2110.00641, decoupled PPO; AReaL `ppo_actor_loss_fn`).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

Divergence = Literal["tv", "kl"]
StaleDivergence = Literal["tv", "kl", "ratio", "staleness"]
_EPS = 1e-8


def token_mean(values: Tensor, loss_mask: Tensor) -> Tensor:
    """Σ values·mask / Σ mask: the mean over every trainable token of the batch (0 when there is none)."""
    mask = loss_mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def bernoulli_kl(mu: Tensor, pi: Tensor) -> Tensor:
    """KL(Bern(μ) ‖ Bern(π)) = μ log(μ/π) + (1−μ) log((1−μ)/(1−π)), the binary KL of one token's probability."""
    mu = mu.clamp(_EPS, 1 - _EPS)
    pi = pi.clamp(_EPS, 1 - _EPS)
    return mu * (mu.log() - pi.log()) + (1 - mu) * (torch.log1p(-mu) - torch.log1p(-pi))


def trust_region_keep(logp: Tensor, behaviour_logp: Tensor, advantages: Tensor, *, divergence: Divergence = "tv",
                      delta_low: float = 0.15, delta_high: float = 0.15) -> Tensor:
    """DPPO's sign-aware trust-region mask: True where a token keeps its gradient.

    A token is dropped only when the current policy has already moved beyond δ from the behaviour policy
    *in the direction its advantage pushes*:
      - "tv":  drop if A > 0 and π − μ > δ_high, or A < 0 and π − μ < −δ_low;
      - "kl":  with D = KL(Bern(μ) ‖ Bern(π)), drop if D > δ_high with π > μ and A > 0,
               or D > δ_low with π < μ and A < 0.
    π = exp(logp), μ = exp(behaviour_logp), both of the sampled token. Computed without gradient.
    """
    with torch.no_grad():
        pi, mu = logp.detach().exp(), behaviour_logp.exp()
        pos, neg = advantages > 0, advantages < 0
        if divergence == "tv":
            diff = pi - mu
            drop = (pos & (diff > delta_high)) | (neg & (diff < -delta_low))
        elif divergence == "kl":
            d = bernoulli_kl(mu, pi)
            drop = (pos & (pi > mu) & (d > delta_high)) | (neg & (pi < mu) & (d > delta_low))
        else:
            raise ValueError(f"unknown divergence {divergence!r}; expected 'tv' or 'kl'")
    return ~drop


def stale_keep(logp: Tensor, behaviour_logp: Tensor, advantages: Tensor, staleness: Tensor, *,
               min_staleness: int = 1, divergence: StaleDivergence = "tv", threshold: float = 0.2) -> Tensor:
    """The asymmetric mask for stale (asynchronous) trajectories: True where a token keeps its gradient.

    A token sampled `staleness` policy versions ago (staleness ≥ `min_staleness`) with a non-positive
    advantage is dropped when its divergence from the behaviour policy exceeds `threshold`; tokens with
    A > 0 and fresh tokens are always kept. The divergence is configurable because the paper does not
    publish it (this is the project's reading): "tv" |π − μ|, "kl" KL(Bern(μ) ‖ Bern(π)), "ratio"
    |log(π/μ)|, or "staleness" (the staleness itself, in versions: drop when staleness > threshold).
    Combine with `trust_region_keep` by logical and (pass the product as `keep` to `dppo_loss`).
    """
    with torch.no_grad():
        pi, mu = logp.detach().exp(), behaviour_logp.exp()
        if divergence == "tv":
            d = (pi - mu).abs()
        elif divergence == "kl":
            d = bernoulli_kl(mu, pi)
        elif divergence == "ratio":
            d = (logp.detach() - behaviour_logp).abs()
        elif divergence == "staleness":
            d = staleness.to(pi.dtype)
        else:
            raise ValueError(f"unknown stale divergence {divergence!r}; expected tv, kl, ratio or staleness")
        drop = (staleness >= min_staleness) & (advantages <= 0) & (d > threshold)
    return ~drop


def dppo_loss(logp: Tensor, behaviour_logp: Tensor, advantages: Tensor, loss_mask: Tensor, *,
              divergence: Divergence = "tv", delta_low: float = 0.15, delta_high: float = 0.15,
              is_cap: float = 10.0, keep: Tensor | None = None) -> tuple[Tensor, dict[str, Tensor]]:
    """Divergence PPO: L = −(1/|T|) Σ_{t∈T} M_t · sg[min(ρ_t, C)] · A_t · log π_θ(y_t).

    ρ_t = π_θ(y_t)/μ(y_t) against the behaviour (rollout) policy μ; M_t the trust-region mask of
    `trust_region_keep` (and `keep`, e.g. `stale_keep`, when given); C = `is_cap`; T every token with
    loss_mask 1 — masked-out tokens stay in the denominator. Because ∇ρ = ρ ∇log π, the gradient equals that
    of −(1/|T|) Σ_{t∈K} A_t ρ_t while ρ_t < C. Returns the loss and, as tensors: `masked_pos`/`masked_neg`
    (fraction of A>0 / A<0 trainable tokens the mask dropped), `ratio_mean` (mean ρ over T) and `truncated`
    (fraction of T with ρ > C).
    """
    mask = loss_mask.to(logp.dtype)
    trust = trust_region_keep(logp, behaviour_logp, advantages, divergence=divergence,
                              delta_low=delta_low, delta_high=delta_high)
    keep_all = trust if keep is None else trust & keep.bool()
    log_ratio = (logp.detach() - behaviour_logp).clamp(max=20.0)  # exp(20) ≫ any cap; avoids inf
    ratio = log_ratio.exp()
    weight = ratio.clamp(max=is_cap)
    per_token = -keep_all.to(logp.dtype) * weight * advantages * logp
    loss = token_mean(per_token, mask)
    with torch.no_grad():
        on = mask.bool()
        stats = {
            "masked_pos": _fraction(~keep_all & on & (advantages > 0), on & (advantages > 0)),
            "masked_neg": _fraction(~keep_all & on & (advantages < 0), on & (advantages < 0)),
            "ratio_mean": token_mean(ratio, mask),
            "truncated": _fraction(on & (ratio > is_cap), on),
        }
    return loss, stats


def decoupled_ppo_loss(logp: Tensor, proximal_logp: Tensor, behaviour_logp: Tensor, advantages: Tensor,
                       loss_mask: Tensor, *, clip_low: float = 0.2, clip_high: float = 0.2,
                       behaviour_cap: float | None = None) -> tuple[Tensor, dict[str, Tensor]]:
    """Decoupled PPO (the baseline): L = −(1/|T|) Σ_t w_t · min(u_t A_t, clip(u_t, 1−ε_low, 1+ε_high) A_t).

    u_t = π_θ/π_prox is clipped against the proximal policy (the trainer's weights before this update), so the
    trust region does not widen as data ages; w_t = π_prox/μ is a constant importance weight to the behaviour
    policy, capped at `behaviour_cap` when given (tokens above it get weight 0, AReaL's "mask" mode).
    Returns the loss and `clipped` (fraction of T where the clipped term won), `ratio_mean` (mean u),
    `behaviour_weight_mean` (mean w) and `behaviour_dropped` (fraction of T over the cap).
    """
    mask = loss_mask.to(logp.dtype)
    with torch.no_grad():
        w = (proximal_logp - behaviour_logp).clamp(max=20.0).exp()
        over = w > behaviour_cap if behaviour_cap is not None else torch.zeros_like(w, dtype=torch.bool)
        w = torch.where(over, torch.zeros_like(w), w)
    u = (logp - proximal_logp).clamp(max=20.0).exp()
    unclipped = u * advantages
    clipped = u.clamp(1 - clip_low, 1 + clip_high) * advantages
    loss = token_mean(-w * torch.minimum(unclipped, clipped), mask)
    with torch.no_grad():
        on = mask.bool()
        stats = {
            "clipped": _fraction(on & (clipped < unclipped), on),
            "ratio_mean": token_mean(u.detach(), mask),
            "behaviour_weight_mean": token_mean(w, mask),
            "behaviour_dropped": _fraction(on & over, on),
        }
    return loss, stats


def log_length_penalty(lengths: Tensor, coef: float) -> Tensor:
    """The log-length reward term r_len = −coef · ln(1 + L), L the episode's assistant-token length.

    This is the project's reading of the paper's "log-length penalty" (its formula is not public). It is
    added to the outcome reward *before* group normalisation, so only length ratios inside a group matter:
    two correct episodes of L₁ and L₂ tokens differ by coef · ln((1+L₂)/(1+L₁)) before normalisation.
    """
    return -coef * torch.log1p(lengths.to(torch.float64).clamp(min=0)).to(torch.float32)


def _fraction(hit: Tensor, among: Tensor) -> Tensor:
    return hit.sum().to(torch.float32) / among.sum().clamp(min=1).to(torch.float32)
