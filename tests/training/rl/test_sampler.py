"""The transformers engine samples from the distribution it records, checked statistically.

A tiny random model with its logits sharpened (final norm ×8, so temperature and truncation matter) draws
the first token of one prompt many times through the engine's own sampling paths. Two checks per setting:
  1. each recorded log-probability equals log q(token), q the requested sampling distribution computed
     here from a plain forward pass (softmax(logits/T), top-k/top-p renormalised when set);
  2. the sampled tokens are distributed as q: Pearson's χ² over bins of q-mass with ≥ 10 expected draws
     each, rejected at α = 1e-3 (a correct sampler fails one seed in a thousand; the seed is fixed, so the
     test is deterministic).
False-pass rate, computed in the test rather than asserted by hand: for each bug the issue names (top-50
truncation while recording the full softmax — transformers' default when top_k is left unset — and an
engine that ignores the temperature) the χ² statistic is simulated 2,000 times from the buggy sampler's
distribution with numpy; the fraction of simulations under the critical value is the probability that the
test passes with the bug present. It must be below 1% (it is 0 of 2,000 for both here).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
np = pytest.importorskip("numpy")
stats = pytest.importorskip("scipy.stats")

from leaf_cli.llm.engine import Sampling  # noqa: E402
from leaf_cli.llm.transformers_engine import TransformersEngine  # noqa: E402

DRAWS = 2000
ALPHA = 1e-3
PROMPT = [1, 72, 101, 108, 108, 111, 2, 1]


def _engine(path: Path) -> TransformersEngine:
    engine = TransformersEngine.load(path, context_limit=256)
    with torch.no_grad():
        engine.model.model.norm.weight.mul_(8.0)  # sharper logits: a long tail and a temperature that matters
    return engine


def _logits(engine: TransformersEngine) -> torch.Tensor:
    with torch.no_grad():
        return engine.model(input_ids=torch.tensor([PROMPT])).logits[0, -1].double()


def _target(logits: torch.Tensor, temperature: float, top_k: int = 0, top_p: float = 1.0) -> np.ndarray:
    """The requested sampling distribution q, as transformers defines top-k and top-p."""
    scaled = logits / temperature
    if top_k:
        kth = torch.topk(scaled, top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if top_p < 1.0:
        order = torch.argsort(scaled)  # ascending, as TopPLogitsWarper
        cum = torch.softmax(scaled[order], -1).cumsum(-1)
        drop = cum <= 1 - top_p
        drop[-1] = False
        scaled = scaled.clone()
        scaled[order[drop]] = float("-inf")
    return torch.softmax(scaled, -1).numpy()


def _draw(engine: TransformersEngine, sampling: Sampling) -> tuple[list[int], list[float]]:
    """DRAWS first tokens of PROMPT: 4 batched generates of 450 rows plus 200 single-conversation calls."""
    ids: list[int] = []
    lps: list[float] = []
    for _ in range(4):
        for row_ids, row_lps in engine._sample_rows([{"prompt": PROMPT, "budget": 1}] * 450, sampling):
            ids += row_ids
            lps += row_lps
    for _ in range(200):
        row_ids, row_lps, _cached = engine._sample(SimpleNamespace(token_log=object()), PROMPT, sampling, 1)
        ids += row_ids
        lps += row_lps
    return ids, lps


def _bins(q: np.ndarray) -> list[np.ndarray]:
    """Tokens in descending q, grouped so that every bin expects ≥ 10 of DRAWS (the tail pooled)."""
    order = np.argsort(-q)
    bins, current, mass = [], [], 0.0
    for t in order:
        if q[t] == 0:
            break
        current.append(t)
        mass += q[t]
        if mass * DRAWS >= 10:
            bins.append(np.array(current))
            current, mass = [], 0.0
    if current:
        bins[-1] = np.concatenate([bins[-1], np.array(current)])
    return bins


def _chi2(counts: np.ndarray, q: np.ndarray, bins: list[np.ndarray]) -> float:
    observed = np.array([counts[b].sum() for b in bins], dtype=float)
    expected = np.array([q[b].sum() for b in bins]) * counts.sum()
    outside = counts.sum() - observed.sum()  # draws of tokens q gives probability 0: impossible
    return float(((observed - expected) ** 2 / expected).sum() + (np.inf if outside else 0.0))


def _false_pass_rate(q: np.ndarray, bug: np.ndarray, bins: list[np.ndarray], critical: float) -> float:
    rng = np.random.default_rng(0)
    sims = rng.multinomial(DRAWS, bug / bug.sum(), size=2000)
    return float(np.mean([_chi2(s, q, bins) <= critical for s in sims]))


@pytest.mark.parametrize("temperature,top_k,top_p", [(0.5, 0, 1.0), (1.0, 0, 1.0), (0.7, 20, 1.0), (1.0, 0, 0.8)])
def test_sampled_tokens_follow_the_recorded_distribution(tiny_model_dir: Path, temperature: float, top_k: int,
                                                         top_p: float) -> None:
    engine = _engine(tiny_model_dir)
    logits = _logits(engine)
    q = _target(logits, temperature, top_k, top_p)
    torch.manual_seed(1234)
    ids, lps = _draw(engine, Sampling(temperature=temperature, top_k=top_k, top_p=top_p, min_p=0.0,
                                      max_tokens=1, enable_thinking=False))
    assert len(ids) == DRAWS
    # 1. recorded = log q of the sampled token
    np.testing.assert_allclose(np.array(lps), np.log(q[np.array(ids)]), atol=2e-4)
    # 2. the draws are distributed as q
    bins = _bins(q)
    critical = float(stats.chi2.ppf(1 - ALPHA, len(bins) - 1))
    counts = np.bincount(np.array(ids), minlength=len(q))
    assert _chi2(counts, q, bins) <= critical, "the engine does not sample from the distribution it records"
    # The test's power against the two bugs of the issue, for this model and prompt.
    if top_k == 0 and top_p == 1.0:
        top50 = _target(logits, temperature, top_k=50)
        assert q[np.argsort(-q)[50:]].sum() > 0.05  # the tail the top-50 default would never sample
        assert _false_pass_rate(q, top50, bins, critical) < 0.01
        ignored = _target(logits, 1.0 if temperature != 1.0 else 0.5)
        assert _false_pass_rate(q, ignored, bins, critical) < 0.01


def test_unset_top_k_no_longer_means_top_50(tiny_model_dir: Path) -> None:
    """top_k 0 samples from the whole vocabulary: tokens outside the 50 most likely do get drawn."""
    engine = _engine(tiny_model_dir)
    q = _target(_logits(engine), 1.0)
    torch.manual_seed(7)
    ids, _ = _draw(engine, Sampling(temperature=1.0, top_k=0, top_p=1.0, max_tokens=1, enable_thinking=False))
    outside = sum(1 for t in ids if t in set(np.argsort(-q)[50:].tolist()))
    expected = q[np.argsort(-q)[50:]].sum() * DRAWS
    assert outside > expected / 2 > 10, (outside, expected)
