"""Statements, the Wilson interval, the scripted oracle, band verdicts, config precedence, P2P flakiness."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.tasks import Task
from leaf_train.taskpilot import statement
from leaf_train.taskpilot.calibrate import verdict
from leaf_train.taskpilot.config import SynthConfig, load_config
from leaf_train.taskpilot.policy import Policy, ScriptedOracle, wilson
from leaf_train.taskpilot.validate import split_p2p

OBS = {"tests/test_core.py::test_clamp_low": "assert 10 == 0\n +  where 10 = clamp(-3, 0, 10)",
       "tests/test_core.py::test_clamp_high": "assert 0 == 10"}
SECRET = ["if value < low:", "if value >= low:"]


def test_statement_levels_grow_in_detail_and_never_quote_the_changed_line() -> None:
    texts = [statement.write("mathx", OBS, level, file="mathx/core.py", function="clamp", secret_lines=SECRET)
             for level in range(statement.MAX_LEVEL + 1)]
    assert all(len(a) < len(b) for a, b in zip(texts, texts[1:]))
    assert "clamp low" not in texts[0] and "clamp low" in texts[1]
    assert "assert 0 == 10" in texts[2] and "tests/test_core.py::test_clamp_high" in texts[3]
    assert "mathx/core.py" in texts[4] and "mathx/core.py" not in texts[3]
    assert not any(statement.leaks(t, SECRET) for t in texts)


def test_a_message_quoting_the_changed_line_is_left_out() -> None:
    text = statement.write("mathx", {"t.py::test_a": "SyntaxError near: if value >= low:"}, 3, secret_lines=SECRET)
    assert not statement.leaks(text, SECRET) and "t.py::test_a" in text


def test_wilson_interval_matches_hand_computed_values() -> None:
    lo, hi = wilson(2, 4)
    assert lo == pytest.approx(0.1500, abs=1e-4) and hi == pytest.approx(0.8500, abs=1e-4)
    assert wilson(0, 5)[0] == 0.0 and wilson(0, 5)[1] == pytest.approx(0.4345, abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)


def test_band_verdict_is_inclusive() -> None:
    assert [verdict(p, (0.25, 0.75)) for p in (0.0, 0.25, 0.5, 0.75, 1.0)] == ["below", "in_band", "in_band", "in_band", "above"]


def _task(statement_text: str = "s") -> Task:
    return Task(instance_id="t1", repo="r", base_commit="c", problem_statement=statement_text, patch="diff", FAIL_TO_PASS=["a"])


def test_scripted_oracle_is_deterministic_and_follows_its_probability() -> None:
    policy = Policy("scripted:0,0.5,1")
    draws = [[policy.factory(_task(), 1, seed=3)().solves for _ in range(1)] for _ in range(2)]
    assert draws[0] == draws[1]
    factory = policy.factory(_task(), 1, seed=3)
    rate = sum(factory().solves for _ in range(400)) / 400
    assert 0.4 < rate < 0.6
    assert not any(policy.factory(_task(), 0, seed=1)().solves for _ in range(20))
    assert all(policy.factory(_task(), 2, seed=1)().solves for _ in range(20))
    resumed = policy.factory(_task(), 1, seed=3, first_rollout=5)().solves
    fresh = policy.factory(_task(), 1, seed=3)
    assert resumed == [fresh().solves for _ in range(6)][5]


def test_scripted_oracle_applies_the_gold_patch_with_one_bash_call() -> None:
    oracle = ScriptedOracle("diff --git a/x b/x\n", 1.0, "k")
    first = oracle.complete(None, [], None)  # type: ignore[arg-type]
    assert first.tool_calls[0].name == "Bash" and "git apply" in first.tool_calls[0].arguments["command"]
    assert not oracle.complete(None, [], None).tool_calls  # type: ignore[arg-type]


@pytest.mark.parametrize("spec", ["scripted:1.5", "scripted:x", "openai:model", "llama:/nope.gguf", "magic:1"])
def test_bad_policy_specs_are_user_errors(spec: str) -> None:
    with pytest.raises(LeafError):
        Policy(spec)


def test_config_precedence_file_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("target: 7\nband: 0.1,0.9\nrollouts: 3\nsources: [pypi:toolz==1.0.0]\n")
    cfg = load_config(path, {"rollouts": 5, "workers": None})
    assert (cfg.target, cfg.band, cfg.rollouts, cfg.workers) == (7, (0.1, 0.9), 5, 1)
    assert cfg.out.is_absolute()


@pytest.mark.parametrize("bad", [{"band": "0.9,0.1"}, {"band": "0.5"}, {"generator": "llm"}, {"nope": 1}])
def test_bad_config_is_rejected(bad: dict) -> None:
    with pytest.raises(ValueError):
        SynthConfig.model_validate(bad)


def test_p2p_outcomes_that_change_across_reruns_are_flaky_and_steady_gold_failures_broken() -> None:
    gold = [{"a": "passed", "b": "passed", "c": "failed", "d": "passed"},
            {"a": "passed", "b": "failed", "c": "failed", "d": "passed"},
            {"a": "passed", "b": "passed", "c": "failed", "d": "passed"}]
    empty = {"a": "passed", "b": "passed", "c": "passed", "d": "failed"}
    flaky, broken = split_p2p(["a", "b", "c", "d"], gold, empty)
    assert (flaky, broken) == (["b", "d"], ["c"])
