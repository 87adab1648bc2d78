"""The calibration rollout's budget: per-turn tokens, turns and context window are SynthConfig fields that
reach the episode limits, the sampling and the llama.cpp context (no edited copy of the GGUF)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from leaf_cli.tasks import Task
from leaf_train.taskpilot.calibrate import rollout_budget
from leaf_train.taskpilot.config import SynthConfig
from leaf_train.taskpilot.policy import Policy


def test_the_budget_reaches_the_limits_and_the_sampling(tmp_path: Path) -> None:
    limits, sampling = rollout_budget(SynthConfig(out=tmp_path, agent_max_turns=3, agent_timeout_s=9.0))
    assert (limits.max_turns, limits.max_seconds, limits.max_context) == (3, 9.0, 65_536) and sampling is None
    limits, sampling = rollout_budget(SynthConfig(out=tmp_path, agent_max_tokens=256, agent_max_context=1536))
    assert limits.max_context == 1536 and sampling is not None and sampling.max_tokens == 256
    assert sampling.temperature == 0.6  # everything else stays leaf's default sampling
    with pytest.raises(ValidationError):
        SynthConfig(out=tmp_path, agent_max_tokens=0)


@pytest.mark.llama
def test_a_llama_policy_opens_the_configured_window(smollm2_path: Path) -> None:
    gguf = smollm2_path
    task = Task(instance_id="t", repo="/r", base_commit="c", problem_statement="p", patch="", FAIL_TO_PASS=["x"])
    engine = Policy(f"llama:{gguf}", n_ctx=1024).factory(task, None, 0)()
    assert engine.context_limit == 1024 and engine.llm.n_ctx() == 1024
