"""Presets resolve to the paper's published settings; the paper's report averages runs."""

from __future__ import annotations

import math

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.tasks.runner.presets import PRESETS, get_preset, paper_report


@pytest.mark.parametrize("name", ["swebench-verified", "swebench-pro", "terminal-bench-2", "patcheval"])
def test_every_preset_samples_as_frognano_was_evaluated(name: str) -> None:
    preset = get_preset(name)
    s = preset.sampling
    assert (s.temperature, s.top_p, s.top_k, s.min_p, s.enable_thinking, s.max_tokens) == (0.6, 0.95, 20, 0.0, True, 8192)
    assert preset.attempts == 3 and preset.sandbox == "docker" and preset.harness == "leaf"


@pytest.mark.parametrize(("name", "turns", "context", "seconds", "paper"), [
    ("swebench-verified", 100, 65_536, 3_000, 61.5),
    ("swebench-pro", 100, 65_536, 3_000, 37.6),
    ("terminal-bench-2", 150, 131_072, 10_800, 31.1),
    ("patcheval", 100, 65_536, 3_000, 23.2),
])
def test_limits_and_published_scores(name: str, turns: int, context: int, seconds: float, paper: float) -> None:
    preset = get_preset(name)
    assert (preset.limits.max_turns, preset.limits.max_context, preset.limits.max_seconds) == (turns, context, seconds)
    assert preset.paper_solve_rate == paper


def test_unknown_preset_lists_the_valid_ones() -> None:
    with pytest.raises(LeafError, match="choose one of: swebench-verified, swebench-pro, terminal-bench-2, patcheval"):
        get_preset("swebench-lite")
    assert set(PRESETS) == {"swebench-verified", "swebench-pro", "terminal-bench-2", "patcheval"}


def test_paper_report_is_the_mean_over_runs_with_its_standard_error() -> None:
    # 4 tasks, 3 runs: run 1 solves 2, run 2 solves 3, run 3 solves 1 (its 4th attempt is missing).
    solved = {1: {"a", "b"}, 2: {"a", "b", "c"}, 3: {"a"}}
    rows = [{"instance_id": i, "attempt": run, "resolved": i in solved[run]}
            for run in (1, 2, 3) for i in "abcd" if not (run == 3 and i == "d")]
    report = paper_report(rows)
    assert report["runs"] == 3 and report["n_tasks"] == 4
    assert report["run_solve_rates"] == {"1": 0.5, "2": 0.75, "3": 0.25}
    assert report["mean_solve_rate"] == 0.5
    assert report["se_over_runs"] == pytest.approx(math.sqrt(((0.0) ** 2 + 0.25 ** 2 + 0.25 ** 2) / 2) / math.sqrt(3), abs=1e-6)
    assert paper_report([{"instance_id": "a", "attempt": 1, "resolved": True}])["se_over_runs"] is None
