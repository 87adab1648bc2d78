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


def token_mean(values: Tensor, loss_mask: Tensor, num_tokens: Tensor | float | None = None) -> Tensor:
    """Σ values·mask / |T|: the mean over every trainable token (0 when there is none).

    |T| is `loss_mask.sum()` unless `num_tokens` is given: the trainer passes the count of the whole step
    (every rank, every micro-batch, zero-advantage episodes included) so that a micro-batch's sum is divided
    by the paper's |T| and not by its own size."""
    mask = loss_mask.to(values.dtype)
    count = mask.sum() if num_tokens is None else torch.as_tensor(num_tokens, dtype=values.dtype)
    return (values * mask).sum() / count.clamp(min=1.0)


def binary_kl(behaviour_logp: Tensor, logp: Tensor) -> Tensor:
    """KL(Bern(μ) ‖ Bern(π)) = μ log(μ/π) + (1−μ) log((1−μ)/(1−π)) from log μ and log π, without NaN or inf.

    In float32 a probability above 1 − 6e-8 rounds to 1.0, so `1 − p` is 0 and its log −inf (1.7% of a
    135M model's sampled tokens). Here everything is float64 and 1 − p comes from the log-probability as
    −expm1(log p), exact for p near 1; log-probabilities are capped just below 0 so both logs stay finite.
    Returns float32."""
    cap = -1e-15  # p ≤ 1 − 1e-15: the complement is ≥ 1e-15, its log ≥ −34.5
    lm = behaviour_logp.detach().double().clamp(max=cap)
    lp = logp.detach().double().clamp(max=cap)
    mu = lm.exp()
    log_not_mu, log_not_pi = torch.log(-torch.expm1(lm)), torch.log(-torch.expm1(lp))
    kl = mu * (lm - lp) + (1 - mu) * (log_not_mu - log_not_pi)
    return kl.clamp(min=0.0).float()  # ≥ 0 in exact arithmetic; rounding can leave −1e-17


def bernoulli_kl(mu: Tensor, pi: Tensor) -> Tensor:
    """`binary_kl` from probabilities (μ, π) instead of log-probabilities."""
    return binary_kl(mu.double().clamp(min=1e-300).log(), pi.double().clamp(min=1e-300).log())


def trust_region_keep(logp: Tensor, behaviour_logp: Tensor, advantages: Tensor, *, divergence: Divergence = "tv",
                      delta_low: float = 0.15, delta_high: float = 0.15) -> Tensor:
    """DPPO's sign-aware trust-region mask: True where a token keeps its gradient.

    A token is dropped only when the current policy has already moved beyond δ from the behaviour policy
    *in the direction its advantage pushes*:
      - "tv":  drop if A > 0 and π − μ > δ_high, or A < 0 and π − μ < −δ_low;
      - "kl":  with D = KL(Bern(μ) ‖ Bern(π)) (`binary_kl`), drop if D > δ_high with π > μ and A > 0,
               or D > δ_low with π < μ and A < 0.
    π = exp(logp), μ = exp(behaviour_logp), both of the sampled token. Computed without gradient.
    """
    with torch.no_grad():
        pos, neg = advantages > 0, advantages < 0
        if divergence == "tv":
            diff = logp.detach().exp() - behaviour_logp.exp()
            drop = (pos & (diff > delta_high)) | (neg & (diff < -delta_low))
        elif divergence == "kl":
            d = binary_kl(behaviour_logp, logp)
            up, down = logp.detach() > behaviour_logp, logp.detach() < behaviour_logp
            drop = (pos & up & (d > delta_high)) | (neg & down & (d > delta_low))
        else:
            raise ValueError(f"unknown divergence {divergence!r}; expected 'tv' or 'kl'")
    return ~drop


def stale_keep(logp: Tensor, behaviour_logp: Tensor, advantages: Tensor, staleness: Tensor, *,
               min_staleness: int = 1, divergence: StaleDivergence = "tv", threshold: float = 0.2) -> Tensor:
    """The paper's asymmetric mask for stale (asynchronous) trajectories: True where a token keeps its gradient.

    K = every token with A > 0, plus the non-positive-advantage tokens whose probability did *not fall*
    past the threshold. A token sampled `staleness` ≥ `min_staleness` policy versions ago with A ≤ 0 is
    dropped only when the current policy already pushed it down by more than `threshold`:
      "tv" Δp = π − μ < −threshold; "kl" π < μ and KL(Bern(μ) ‖ Bern(π)) > threshold; "ratio"
      log(π/μ) < −threshold; "staleness" (direction-free, the age itself) staleness > threshold.
    A non-positive token whose probability *rose* keeps its gradient: that gradient is what pushes it back
    down. The paper states the rule on Δp ("tv"); the others are configurable readings.

    Interaction with DPPO's own mask (a documented choice, see training/README.md): the trainer keeps a
    token only when both masks keep it (logical and), over the paper's denominator |T| (all trainable
    tokens). DPPO's trust region also drops A > 0 tokens whose probability already rose past δ_high, which
    the paper's K would keep; for A < 0 both masks test the same direction, so on stale tokens the stricter
    threshold wins, min(threshold, δ_low) for "tv". A = 0 tokens carry no gradient either way.
    """
    with torch.no_grad():
        lp = logp.detach()
        if divergence == "tv":
            fell = (lp.exp() - behaviour_logp.exp()) < -threshold
        elif divergence == "kl":
            fell = (lp < behaviour_logp) & (binary_kl(behaviour_logp, lp) > threshold)
        elif divergence == "ratio":
            fell = (lp - behaviour_logp) < -threshold
        elif divergence == "staleness":
            fell = staleness.to(lp.dtype) > threshold
        else:
            raise ValueError(f"unknown stale divergence {divergence!r}; expected tv, kl, ratio or staleness")
        drop = (staleness >= min_staleness) & (advantages <= 0) & fell
    return ~drop


def dppo_loss(logp: Tensor, behaviour_logp: Tensor, advantages: Tensor, loss_mask: Tensor, *,
              divergence: Divergence = "tv", delta_low: float = 0.15, delta_high: float = 0.15,
              is_cap: float = 10.0, keep: Tensor | None = None,
              num_tokens: Tensor | float | None = None) -> tuple[Tensor, dict[str, Tensor]]:
    """Divergence PPO: L = −(1/|T|) Σ_{t∈T} M_t · sg[min(ρ_t, C)] · A_t · log π_θ(y_t).

    ρ_t = π_θ(y_t)/μ(y_t) against the behaviour (rollout) policy μ; M_t the trust-region mask of
    `trust_region_keep` (and `keep`, e.g. `stale_keep`, when given); C = `is_cap`; T every token with
    loss_mask 1 — masked-out tokens stay in the denominator, which is `num_tokens` when given (the trainer's
    count over the whole step; see `token_mean`). Because ∇ρ = ρ ∇log π, the gradient equals that
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
    loss = token_mean(per_token, mask, num_tokens)
    with torch.no_grad():
        on = mask.bool()
        stats = {
            "masked_pos": _fraction(~keep_all & on & (advantages > 0), on & (advantages > 0)),
            "masked_neg": _fraction(~keep_all & on & (advantages < 0), on & (advantages < 0)),
            "stale_dropped": _fraction(~keep.bool() & on, on) if keep is not None else torch.zeros(()),
            "ratio_mean": token_mean(ratio, mask),
            "truncated": _fraction(on & (ratio > is_cap), on),
        }
    return loss, stats


def decoupled_ppo_loss(logp: Tensor, proximal_logp: Tensor, behaviour_logp: Tensor, advantages: Tensor,
                       loss_mask: Tensor, *, clip_low: float = 0.2, clip_high: float = 0.2,
                       behaviour_cap: float | None = None,
                       num_tokens: Tensor | float | None = None) -> tuple[Tensor, dict[str, Tensor]]:
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
    loss = token_mean(-w * torch.minimum(unclipped, clipped), mask, num_tokens)
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
    """The log-length term ℓ = −coef · ln(1 + L), L the episode's assistant-token length.

    This is the project's reading of the paper's "log-length penalty" (its formula is not public). The
    trainer centres it per group and adds it to the advantage after the std normalisation
    (`advantages.group_advantages`), so two episodes of L₁ and L₂ tokens in one group differ in advantage
    by exactly coef · ln((1+L₂)/(1+L₁)) from length, whatever the outcomes' spread.
    """
    return -coef * torch.log1p(lengths.to(torch.float64).clamp(min=0)).to(torch.float32)


def _fraction(hit: Tensor, among: Tensor) -> Tensor:
    return hit.sum().to(torch.float32) / among.sum().clamp(min=1).to(torch.float32)
