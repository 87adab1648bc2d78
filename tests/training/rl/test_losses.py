"""DPPO, the stale mask and decoupled PPO against hand-computed tensors and slow, obvious loop references."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from leaf_train.rl import losses  # noqa: E402


def _random_case(seed: int, batch: int = 3, tokens: int = 7):
    g = torch.Generator().manual_seed(seed)
    logp = torch.log(torch.rand(batch, tokens, generator=g).clamp(0.02, 0.98))
    behaviour = torch.log(torch.rand(batch, tokens, generator=g).clamp(0.02, 0.98))
    adv = torch.randn(batch, 1, generator=g).expand(batch, tokens).clone()
    adv[0] = 0.0  # a zero-advantage row, as a flat group gives
    mask = (torch.rand(batch, tokens, generator=g) > 0.3).float()
    return logp, behaviour, adv, mask


def _loop_keep_tv(pi: float, mu: float, a: float, low: float, high: float) -> bool:
    if a > 0 and pi - mu > high:
        return False
    if a < 0 and pi - mu < -low:
        return False
    return True


def _loop_keep_kl(pi: float, mu: float, a: float, low: float, high: float) -> bool:
    d = mu * math.log(mu / pi) + (1 - mu) * math.log((1 - mu) / (1 - pi))
    if a > 0 and pi > mu and d > high:
        return False
    if a < 0 and pi < mu and d > low:
        return False
    return True


def _loop_dppo(logp, behaviour, adv, mask, keep_fn, low, high, cap):
    total, count = 0.0, 0.0
    for b in range(logp.shape[0]):
        for t in range(logp.shape[1]):
            if not mask[b, t]:
                continue
            count += 1
            pi, mu, a = math.exp(logp[b, t]), math.exp(behaviour[b, t]), float(adv[b, t])
            if keep_fn(pi, mu, a, low, high):
                total += -min(pi / mu, cap) * a * float(logp[b, t])
    return total / max(count, 1.0)


def test_tv_mask_by_hand() -> None:
    # π − μ: +0.3 (A>0: drop), +0.3 (A<0: keep), −0.3 (A<0: drop), −0.3 (A>0: keep), +0.1 (A>0: keep)
    pi = torch.tensor([[0.6, 0.6, 0.2, 0.2, 0.4]])
    mu = torch.tensor([[0.3, 0.3, 0.5, 0.5, 0.3]])
    adv = torch.tensor([[1.0, -1.0, -1.0, 1.0, 1.0]])
    keep = losses.trust_region_keep(pi.log(), mu.log(), adv, divergence="tv", delta_low=0.15, delta_high=0.15)
    assert keep.tolist() == [[False, True, False, True, True]]


def test_kl_mask_by_hand() -> None:
    # μ=0.5, π=0.9: D = 0.5 ln(0.5/0.9) + 0.5 ln(0.5/0.1) = 0.5108; μ=0.5, π=0.55: D = 0.00501
    pi = torch.tensor([[0.9, 0.9, 0.1, 0.55]])
    mu = torch.tensor([[0.5, 0.5, 0.5, 0.5]])
    adv = torch.tensor([[1.0, -1.0, -1.0, 1.0]])
    d = losses.bernoulli_kl(mu, pi)
    assert d[0, 0].item() == pytest.approx(0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(0.5 / 0.1), rel=1e-5)
    keep = losses.trust_region_keep(pi.log(), mu.log(), adv, divergence="kl", delta_low=0.05, delta_high=0.05)
    assert keep.tolist() == [[False, True, False, True]]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("divergence", ["tv", "kl"])
def test_dppo_matches_loop_reference(seed: int, divergence: str) -> None:
    logp, behaviour, adv, mask = _random_case(seed)
    low, high, cap = 0.1, 0.2, 1.5
    loss, stats = losses.dppo_loss(logp, behaviour, adv, mask, divergence=divergence, delta_low=low,
                                   delta_high=high, is_cap=cap)
    keep_fn = _loop_keep_tv if divergence == "tv" else _loop_keep_kl
    assert loss.item() == pytest.approx(_loop_dppo(logp, behaviour, adv, mask, keep_fn, low, high, cap), rel=1e-5, abs=1e-7)
    # masked fractions per sign, by loop
    for sign, key in ((1, "masked_pos"), (-1, "masked_neg")):
        among = dropped = 0
        for b in range(logp.shape[0]):
            for t in range(logp.shape[1]):
                a = float(adv[b, t])
                if mask[b, t] and a * sign > 0:
                    among += 1
                    dropped += not keep_fn(math.exp(logp[b, t]), math.exp(behaviour[b, t]), a, low, high)
        assert stats[key].item() == pytest.approx(dropped / max(among, 1))
    ratios = [math.exp(logp[b, t] - behaviour[b, t]) for b in range(3) for t in range(7) if mask[b, t]]
    assert stats["ratio_mean"].item() == pytest.approx(sum(ratios) / len(ratios), rel=1e-5)
    assert stats["truncated"].item() == pytest.approx(sum(r > cap for r in ratios) / len(ratios))


@pytest.mark.parametrize("seed", range(5))
def test_gradient_equals_ratio_objective_below_cap(seed: int) -> None:
    """∇[−sg(ρ)·A·log π] = ∇[−ρ·A] while ρ < C: the project description's −(1/|T|) Σ_K A ρ."""
    logp0, behaviour, adv, mask = _random_case(seed)
    a = logp0.clone().requires_grad_(True)
    loss, _ = losses.dppo_loss(a, behaviour, adv, mask, delta_low=10.0, delta_high=10.0, is_cap=1e9)
    loss.backward()
    b = logp0.clone().requires_grad_(True)
    reference = -((b - behaviour).exp() * adv * mask).sum() / mask.sum()
    reference.backward()
    torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-7)


def test_token_mean_counts_masked_out_tokens() -> None:
    # Two trainable tokens; one is dropped by the trust region: the loss is half the kept token's term.
    logp = torch.log(torch.tensor([[0.9, 0.4]]))
    behaviour = torch.log(torch.tensor([[0.5, 0.4]]))
    adv = torch.tensor([[1.0, 1.0]])
    mask = torch.tensor([[1.0, 1.0]])
    loss, stats = losses.dppo_loss(logp, behaviour, adv, mask, delta_high=0.15)
    assert loss.item() == pytest.approx(-(1.0 * 1.0 * math.log(0.4)) / 2)
    assert stats["masked_pos"].item() == pytest.approx(0.5)
    zero = torch.zeros(1, 2)
    empty, _ = losses.dppo_loss(logp, behaviour, adv, zero)
    assert empty.item() == 0.0


def test_importance_weight_is_truncated_and_constant() -> None:
    logp = torch.log(torch.tensor([[0.9]])).requires_grad_(True)
    behaviour = torch.log(torch.tensor([[0.01]]))  # ρ = 90 > C = 10
    loss, stats = losses.dppo_loss(logp, behaviour, torch.tensor([[-1.0]]), torch.ones(1, 1), delta_low=1.0)
    loss.backward()
    assert loss.item() == pytest.approx(10.0 * math.log(0.9))
    assert logp.grad.item() == pytest.approx(10.0)  # d/dlogπ of −C·A·logπ with A = −1
    assert stats["truncated"].item() == 1.0


def _loop_stale_fell(pi: float, mu: float, stale: float, divergence: str, threshold: float) -> bool:
    """The paper's rule by loop: did the token's probability fall past the threshold?"""
    kl = mu * math.log(mu / pi) + (1 - mu) * math.log((1 - mu) / (1 - pi))
    return {"tv": pi - mu < -threshold, "kl": pi < mu and kl > threshold,
            "ratio": math.log(pi / mu) < -threshold, "staleness": stale > threshold}[divergence]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("divergence", ["tv", "kl", "ratio", "staleness"])
def test_stale_mask_matches_loop(seed: int, divergence: str) -> None:
    logp, behaviour, adv, _ = _random_case(seed)
    staleness = torch.randint(0, 4, logp.shape, generator=torch.Generator().manual_seed(seed))
    keep = losses.stale_keep(logp, behaviour, adv, staleness, min_staleness=1, divergence=divergence, threshold=0.3)
    for b in range(logp.shape[0]):
        for t in range(logp.shape[1]):
            pi, mu = math.exp(logp[b, t]), math.exp(behaviour[b, t])
            fell = _loop_stale_fell(pi, mu, float(staleness[b, t]), divergence, 0.3)
            expect_drop = staleness[b, t] >= 1 and adv[b, t] <= 0 and fell
            assert bool(keep[b, t]) == (not expect_drop)


def test_stale_mask_keeps_a_negative_token_whose_probability_rose() -> None:
    """The issue's case: A = −1, μ = 0.3 → π = 0.6 on a stale token keeps its gradient (it pushes π back
    down); μ = 0.6 → π = 0.3 (fell past δ) is dropped; A > 0 is always kept; fresh tokens are never touched."""
    pi = torch.tensor([[0.6, 0.3, 0.05, 0.3]])
    mu = torch.tensor([[0.3, 0.6, 0.9, 0.6]])
    adv = torch.tensor([[-1.0, -1.0, 1.0, -1.0]])
    staleness = torch.tensor([[1, 1, 1, 0]])
    for divergence in ("tv", "kl", "ratio"):
        keep = losses.stale_keep(pi.log(), mu.log(), adv, staleness, divergence=divergence, threshold=0.1)
        assert keep.tolist() == [[True, False, True, True]], divergence
    # The gradient on the risen token is the one that lowers it: d loss / d log π = −A·ρ = +2 > 0.
    logp = pi.log().requires_grad_(True)
    keep = losses.stale_keep(logp, mu.log(), adv, staleness, threshold=0.2)
    loss, stats = losses.dppo_loss(logp, mu.log(), adv, torch.ones(1, 4), delta_low=1.0, delta_high=1.0, keep=keep)
    loss.backward()
    assert logp.grad[0, 0].item() == pytest.approx(2.0 / 4)
    assert logp.grad[0, 1].item() == 0.0
    assert stats["stale_dropped"].item() == pytest.approx(0.25)


def test_stale_mask_composes_with_the_trust_region() -> None:
    logp = torch.log(torch.tensor([[0.9, 0.1, 0.1]]))
    behaviour = torch.log(torch.tensor([[0.1, 0.9, 0.9]]))
    adv = torch.tensor([[1.0, -1.0, -1.0]])
    staleness = torch.tensor([[5, 5, 0]])
    keep = losses.stale_keep(logp, behaviour, adv, staleness, threshold=0.2)
    assert keep.tolist() == [[True, False, True]]
    mask = torch.ones(1, 3)
    with_stale, _ = losses.dppo_loss(logp, behaviour, adv, mask, delta_high=1.0, delta_low=1.0, keep=keep)
    without, _ = losses.dppo_loss(logp, behaviour, adv, mask, delta_high=1.0, delta_low=1.0)
    term = lambda a, pi, mu: -min(pi / mu, 10.0) * a * math.log(pi)  # noqa: E731
    pos, neg = term(1, 0.9, 0.1), term(-1, 0.1, 0.9)
    assert without.item() == pytest.approx((pos + 2 * neg) / 3, rel=1e-5)
    assert with_stale.item() == pytest.approx((pos + neg) / 3, rel=1e-5)  # the stale one dropped, |T| still 3


def test_binary_kl_is_finite_when_probabilities_round_to_one() -> None:
    """In float32 μ or π above 1 − 6e-8 is 1.0; the KL must stay finite and large where π collapsed."""
    lm = torch.tensor([[0.0, -1e-9, -1e-9, -0.7, -30.0]])  # μ = 1, 1 − 1e-9, 1 − 1e-9, 0.5, e^-30
    lp = torch.tensor([[-0.7, 0.0, -1e-9, 0.0, -29.0]])
    d = losses.binary_kl(lm, lp)
    assert torch.isfinite(d).all(), d
    exact = []
    for a, b in zip(lm[0].double().tolist(), lp[0].double().tolist()):
        mu, pi = math.exp(a), math.exp(b)
        one_mu, one_pi = max(-math.expm1(a), 1e-15), max(-math.expm1(b), 1e-15)
        exact.append(mu * (a - b) + (1 - mu) * (math.log(one_mu) - math.log(one_pi)) if a != b else 0.0)
    assert d[0].tolist() == pytest.approx([max(e, 0.0) for e in exact], rel=1e-4, abs=1e-6)
    assert d[0, 0].item() == pytest.approx(0.7, rel=1e-6)  # μ = 1 → D = −log π
    # The collapsed negative token (μ = 1.0 in float32, π = 0.5) is now masked; before it was NaN, never masked.
    keep = losses.trust_region_keep(torch.tensor([[-0.7]]), torch.tensor([[0.0]]), torch.tensor([[-1.0]]),
                                    divergence="kl", delta_low=0.05, delta_high=0.05)
    assert keep.tolist() == [[False]]
    naive_mu = torch.tensor(1.0).clamp(1e-8, 1 - 1e-8)  # the old float32 clamp does nothing at 1.0
    assert naive_mu.item() == 1.0


def test_token_mean_uses_the_given_step_count() -> None:
    values, mask = torch.tensor([[2.0, 4.0]]), torch.ones(1, 2)
    assert losses.token_mean(values, mask).item() == 3.0
    assert losses.token_mean(values, mask, num_tokens=6.0).item() == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_decoupled_ppo_matches_loop(seed: int) -> None:
    logp, behaviour, adv, mask = _random_case(seed)
    proximal = behaviour + 0.1 * torch.randn(logp.shape, generator=torch.Generator().manual_seed(seed + 99))
    loss, stats = losses.decoupled_ppo_loss(logp, proximal, behaviour, adv, mask, clip_low=0.2, clip_high=0.28,
                                            behaviour_cap=1.3)
    total = count = dropped = 0.0
    for b in range(3):
        for t in range(7):
            if not mask[b, t]:
                continue
            count += 1
            w = math.exp(proximal[b, t] - behaviour[b, t])
            if w > 1.3:
                w, dropped = 0.0, dropped + 1
            u, a = math.exp(logp[b, t] - proximal[b, t]), float(adv[b, t])
            total += -w * min(u * a, min(max(u, 0.8), 1.28) * a)
    assert loss.item() == pytest.approx(total / count, rel=1e-5, abs=1e-7)
    assert stats["behaviour_dropped"].item() == pytest.approx(dropped / count)


def test_log_length_penalty_formula() -> None:  # the term itself; its use: test_advantages.py
    lengths = torch.tensor([0.0, 9.0, 99.0])
    assert losses.log_length_penalty(lengths, 0.1).tolist() == pytest.approx(
        [0.0, -0.1 * math.log(10), -0.1 * math.log(100)], rel=1e-6)
