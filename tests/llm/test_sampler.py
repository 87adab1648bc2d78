"""TokenSampler against a slow, obvious reference of llama.cpp's chain: top-k, top-p, min-p, temperature."""

from __future__ import annotations

import math

import numpy as np
import pytest

from leaf_cli.llm.engine import Sampling
from leaf_cli.llm.sampler import TokenSampler


def reference(logits: list[float], s: Sampling, valid: set[int] | None = None) -> dict[int, float]:
    """token -> probability, written the long way."""
    ranked = sorted((i for i in range(len(logits)) if valid is None or i in valid), key=lambda i: -logits[i])
    ranked = ranked[: s.top_k] if s.top_k > 0 else ranked
    z = sum(math.exp(logits[i]) for i in ranked)
    kept, mass = [], 0.0
    for i in ranked:
        kept.append(i)
        mass += math.exp(logits[i]) / z
        if mass >= s.top_p:
            break
    top = math.exp(logits[kept[0]]) / z
    kept = [i for i in kept if math.exp(logits[i]) / z >= s.min_p * top]
    w = {i: math.exp(logits[i] / s.temperature) for i in kept}
    total = sum(w.values())
    return {i: v / total for i, v in w.items()}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("grammar", [False, True])
def test_logprob_is_the_probability_under_the_distribution_used(seed: int, grammar: bool) -> None:
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2, size=300).astype(np.float32)
    s = Sampling(temperature=0.7, top_p=0.9, top_k=20, min_p=0.05, seed=seed)
    valid = set(range(0, 300, 3)) if grammar else None
    sampler = TokenSampler(s, (lambda ids: np.isin(ids, list(valid))) if valid else None)
    expected = reference([float(x) for x in logits], s, valid)
    counts: dict[int, int] = {}
    for _ in range(400):
        token, logprob = sampler.sample(logits)
        assert token in expected and logprob == pytest.approx(math.log(expected[token]), abs=1e-5)
        counts[token] = counts.get(token, 0) + 1
    best = max(expected, key=expected.get)
    assert counts.get(best, 0) / 400 == pytest.approx(expected[best], abs=0.1)


def test_greedy_is_a_point_mass_and_respects_the_grammar() -> None:
    logits = np.array([0.0, 5.0, 3.0, 1.0], dtype=np.float32)
    assert TokenSampler(Sampling(temperature=0.0)).sample(logits) == (1, 0.0)
    odd_only = TokenSampler(Sampling(temperature=0.0), lambda ids: ids % 2 == 1)
    assert odd_only.sample(logits) == (1, 0.0)
    even_only = TokenSampler(Sampling(temperature=0.0), lambda ids: ids % 2 == 0)
    assert even_only.sample(logits) == (2, 0.0)


def test_repeat_penalty_lowers_recent_tokens() -> None:
    logits = np.array([2.0, 1.9], dtype=np.float32)
    sampler = TokenSampler(Sampling(temperature=0.0, repeat_penalty=1.5))
    assert [sampler.sample(logits)[0] for _ in range(2)] == [0, 1]
