"""Statistics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from leaf_cli.tasks.runner.stats import (clustered_standard_error, paired_difference, pass_at_k, pass_pow_k,
                                  standard_error, summarize)


def test_pass_at_k_matches_the_formula_by_hand() -> None:
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 0, 3) == 0.0 and pass_at_k(5, 3, 3) == 1.0  # C(2,3) = 0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_pass_pow_k_by_hand() -> None:
    # n=5, c=3, k=2: C(3,2)/C(5,2) = 3/10
    assert pass_pow_k(5, 3, 2) == pytest.approx(0.3)
    assert pass_pow_k(5, 5, 5) == 1.0 and pass_pow_k(5, 4, 5) == 0.0


def test_standard_errors_by_hand() -> None:
    x = [1.0, 0.0, 0.5, 0.5]  # mean 0.5, sample var = (0.25+0.25)/3 = 1/6
    assert standard_error(x) == pytest.approx(math.sqrt(1 / 6 / 4))
    # one task per cluster: the clustered SE equals the plain one
    assert clustered_standard_error(x, ["a", "b", "c", "d"]) == pytest.approx(standard_error(x))
    # clusters {1, 0} and {0.5, 0.5}: sums of deviations 0 and 0 -> SE 0
    assert clustered_standard_error(x, ["a", "a", "b", "b"]) == pytest.approx(0.0)
    # clusters {1, 0.5} (dev +0.5, 0) and {0, 0.5} (dev -0.5, 0): sqrt(2/1 * 0.5) / 4
    assert clustered_standard_error(x, ["a", "b", "b", "a"]) == pytest.approx(math.sqrt(2 * 0.5) / 4)
    assert math.isnan(clustered_standard_error(x, ["a"] * 4))


def test_summary_and_paired_difference() -> None:
    counts = {"t1": (2, 2), "t2": (2, 1), "t3": (2, 0)}
    repos = {"t1": "r1", "t2": "r1", "t3": "r2"}
    s = summarize(counts, repos, infra_failures=1)
    assert s["n_tasks"] == 3 and s["n_attempts"] == 6 and s["resolved"] == 3
    assert s["solve_rate"] == pytest.approx(0.5)
    assert s["pass_at_k"]["1"] == pytest.approx(0.5)
    assert s["pass_at_k"]["2"] == pytest.approx((1 + 1 + 0) / 3)
    assert s["pass_pow_k"]["2"] == pytest.approx(1 / 3)
    # r1 deviations 0.5 + 0 = 0.5, r2 -0.5: sqrt(2 * 0.5) / 3
    assert s["se"] == pytest.approx(round(math.sqrt(1.0) / 3, 6))
    assert s["by_repo"]["r1"] == {"n_tasks": 2, "n_attempts": 4, "resolved": 3, "solve_rate": 0.75}
    assert s["infra_failures"] == 1
    d = paired_difference({"t1": 1.0, "t2": 0.5, "x": 1.0}, {"t1": 0.0, "t2": 0.5, "y": 0.0})
    assert d["mean_diff"] == pytest.approx(0.5) and d["se"] == pytest.approx(0.5)  # sd([1, 0]) / sqrt(2)
    assert d["only_a"] == ["x"] and d["only_b"] == ["y"]
