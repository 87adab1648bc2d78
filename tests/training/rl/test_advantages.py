"""Group advantages: the unbiased std option, and a length penalty that keeps its meaning under std
normalisation (the length term is centred per group and added after the division)."""

from __future__ import annotations

import math

import pytest

from leaf_train.rl.advantages import group_advantages
from leaf_train.rl.config import LossConfig


def test_unbiased_std_divides_by_n_minus_one() -> None:
    rewards, groups = [1.0, 0.0, 0.0, 0.0], ["a"] * 4
    pop, _ = group_advantages(rewards, groups, eps=0.0)
    unb, _ = group_advantages(rewards, groups, std="unbiased", eps=0.0)
    mean = 0.25
    sd_pop = math.sqrt(sum((r - mean) ** 2 for r in rewards) / 4)
    sd_unb = math.sqrt(sum((r - mean) ** 2 for r in rewards) / 3)
    assert pop == pytest.approx([(r - mean) / sd_pop for r in rewards])
    assert unb == pytest.approx([(r - mean) / sd_unb for r in rewards])
    assert LossConfig(group_std="unbiased").group_std == "unbiased"


def test_length_penalty_is_not_amplified_by_the_std() -> None:
    """Equal outcomes, lengths 10 and 11: the length spread is λ·ln(12/11) ≈ 4e-3 at λ = 0.05. Added to
    the reward before normalisation, the std division turned it into advantages of ±1 (λ cancelled);
    added after, the advantages are ±λ·ln(12/11)/2, and λ scales them."""
    lam = 0.05
    terms = [-lam * math.log1p(10), -lam * math.log1p(11)]
    adv, stats = group_advantages([0.0, 0.0], ["a", "a"], length_terms=terms)
    spread = lam * math.log(12 / 11)
    assert adv == pytest.approx([spread / 2, -spread / 2])
    assert stats.zero_variance_groups == 1  # no outcome signal; only the length term moves it
    old_way, _ = group_advantages([t for t in terms], ["a", "a"])  # shaping the reward first
    assert old_way == pytest.approx([1.0, -1.0], abs=1e-3)  # the amplification the fix removes
    double, _ = group_advantages([0.0, 0.0], ["a", "a"], length_terms=[2 * t for t in terms])
    assert double == pytest.approx([2 * a for a in adv])  # λ means what it says


def test_length_term_adds_to_the_outcome_advantage() -> None:
    lam = 0.1
    terms = [-lam * math.log1p(9), -lam * math.log1p(99), -lam * math.log1p(9), -lam * math.log1p(99)]
    adv, _ = group_advantages([1.0, 1.0, 0.0, 0.0], ["a"] * 4, eps=0.0, length_terms=terms)
    centre = sum(terms) / 4
    assert adv == pytest.approx([1 + terms[0] - centre, 1 + terms[1] - centre,
                                 -1 + terms[2] - centre, -1 + terms[3] - centre])


def test_kl_threshold_has_its_own_default() -> None:
    assert (LossConfig().delta_low, LossConfig().delta_high) == (0.15, 0.15)
    kl = LossConfig(divergence="kl")
    assert (kl.delta_low, kl.delta_high) == (0.05, 0.05)
    assert LossConfig(divergence="kl", delta_low=0.1).delta_low == 0.1
