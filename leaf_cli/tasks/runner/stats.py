"""Eval statistics: solve rate with a repository-clustered standard error, unbiased pass@k and pass^k,
paired comparisons. Formulas: Chen et al. 2021 (pass@k), Yao et al. 2024 (pass^k), Miller 2024 (SEs)."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable, Mapping


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k attempts drawn without replacement from n, c correct, is correct)
    = 1 - C(n-c, k) / C(n, k)."""
    if not 0 < k <= n:
        raise ValueError(f"pass@k needs 0 < k <= n (k={k}, n={n})")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_pow_k(n: int, c: int, k: int) -> float:
    """P(all k attempts drawn without replacement are correct) = C(c, k) / C(n, k)."""
    if not 0 < k <= n:
        raise ValueError(f"pass^k needs 0 < k <= n (k={k}, n={n})")
    return math.comb(c, k) / math.comb(n, k)


def mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def standard_error(values: list[float]) -> float:
    """sd(values) / sqrt(T), with the n-1 sample sd; nan for fewer than two values."""
    if len(values) < 2:
        return float("nan")
    m = mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1) / len(values))


def clustered_standard_error(values: list[float], clusters: list[str]) -> float:
    """Cluster-robust SE of the mean: sqrt(G/(G-1) * sum_g (sum_{i in g} (x_i - mean))^2) / T.

    With one task per cluster this equals `standard_error`; nan with fewer than two clusters.
    """
    groups: dict[str, float] = defaultdict(float)
    m = mean(values)
    for value, cluster in zip(values, clusters):
        groups[cluster] += value - m
    g, t = len(groups), len(values)
    if g < 2:
        return float("nan")
    return math.sqrt(g / (g - 1) * sum(s * s for s in groups.values())) / t


def summarize(counts: Mapping[str, tuple[int, int]], repos: Mapping[str, str], infra_failures: int) -> dict:
    """summary.json from per-task (attempts n_i, successes c_i) and each task's repository."""
    ids = sorted(counts)
    rates = [counts[i][1] / counts[i][0] for i in ids]
    clusters = [repos[i] for i in ids]
    n_min = min((counts[i][0] for i in ids), default=0)
    solve = mean(rates)
    se = clustered_standard_error(rates, clusters)
    summary = {
        "n_tasks": len(ids),
        "n_attempts": sum(counts[i][0] for i in ids),
        "attempts_per_task": n_min,
        "resolved": sum(counts[i][1] for i in ids),
        "solve_rate": _num(solve),
        "se": _num(se),
        "se_unclustered": _num(standard_error(rates)),
        "ci95": [_num(solve - 1.96 * se), _num(solve + 1.96 * se)] if not math.isnan(se) else None,
        "pass_at_k": {str(k): _num(mean(pass_at_k(*counts[i], k) for i in ids)) for k in range(1, n_min + 1)},
        "pass_pow_k": {str(k): _num(mean(pass_pow_k(*counts[i], k) for i in ids)) for k in range(1, n_min + 1)},
        "infra_failures": infra_failures,
        "by_repo": {},
    }
    for repo in sorted(set(clusters)):
        mine = [i for i in ids if repos[i] == repo]
        summary["by_repo"][repo] = {
            "n_tasks": len(mine), "n_attempts": sum(counts[i][0] for i in mine),
            "resolved": sum(counts[i][1] for i in mine),
            "solve_rate": _num(mean(counts[i][1] / counts[i][0] for i in mine)),
        }
    return summary


def paired_difference(rates_a: Mapping[str, float], rates_b: Mapping[str, float]) -> dict:
    """Per-task d_i = p_i(A) - p_i(B) over the tasks both ran; mean(d) and SE = sd(d)/sqrt(T)."""
    shared = sorted(set(rates_a) & set(rates_b))
    diffs = {i: rates_a[i] - rates_b[i] for i in shared}
    return {
        "n_shared": len(shared), "per_task": diffs, "mean_diff": _num(mean(diffs.values())),
        "se": _num(standard_error(list(diffs.values()))),
        "only_a": sorted(set(rates_a) - set(rates_b)), "only_b": sorted(set(rates_b) - set(rates_a)),
    }


def _num(value: float) -> float | None:
    """JSON has no NaN: undefined statistics are written as null."""
    return None if math.isnan(value) else round(value, 6)
