"""Token samples from trajectories, group advantages and the padded batch."""

from __future__ import annotations

import pytest

from leaf_cli.agent.trajectory import Trajectory
from leaf_cli.llm.messages import TokenLog
from leaf_train.rl.advantages import group_advantages
from leaf_train.rl.samples import TokenSample, collate, sample_from_trajectory


def _trajectory(log: TokenLog | None) -> Trajectory:
    return Trajectory(run_id="r", task="t", model="m", workdir="/tmp", token_log=log, exit_reason="final_answer")


def test_sample_reads_the_token_log_as_is() -> None:
    log = TokenLog()
    log.append_prompt([5, 6, 7])
    log.append_sampled([8, 9], [-0.5, -0.25], version=3)
    log.append_prompt([10])
    log.append_sampled([11], [-1.0], version=4)
    sample = sample_from_trajectory(_trajectory(log), 1.0, "task-a")
    assert sample.ids == [5, 6, 7, 8, 9, 10, 11]
    assert sample.loss_mask == [0, 0, 0, 1, 1, 0, 1]
    assert sample.behaviour_logprobs == [0.0, 0.0, 0.0, -0.5, -0.25, 0.0, -1.0]
    assert sample.versions == [-1, -1, -1, 3, 3, -1, 4]
    assert (sample.length, sample.oldest_version(), sample.reward) == (3, 3, 1.0)


def test_sample_needs_a_token_log() -> None:
    with pytest.raises(ValueError, match="token-level engine"):
        sample_from_trajectory(_trajectory(None), 0.0, "t")
    broken = TokenLog(ids=[1, 2], mask=[0], logprobs=[0.0, 0.0], versions=[-1, -1])
    with pytest.raises(ValueError, match="inconsistent"):
        sample_from_trajectory(_trajectory(broken), 0.0, "t")


def test_group_advantages_by_hand() -> None:
    rewards = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    groups = ["a", "a", "a", "a", "b", "b"]
    plain, stats = group_advantages(rewards, groups, normalize_std=False)
    assert plain == pytest.approx([0.75, -0.25, -0.25, -0.25, 0.0, 0.0])
    assert (stats.groups, stats.zero_variance_groups) == (2, 1)
    scaled, _ = group_advantages(rewards, groups, normalize_std=True, eps=0.0)
    std = (0.75**2 + 3 * 0.25**2) ** 0.5 / 2  # population std of (1, 0, 0, 0) = sqrt(3)/4
    assert scaled[:4] == pytest.approx([0.75 / std, -0.25 / std, -0.25 / std, -0.25 / std])


def test_collate_pads_and_broadcasts_advantages() -> None:
    a = TokenSample(ids=[1, 2, 3], loss_mask=[0, 1, 1], behaviour_logprobs=[0.0, -0.1, -0.2], versions=[-1, 0, 0],
                    reward=1.0, task_id="t")
    b = TokenSample(ids=[4, 5], loss_mask=[0, 1], behaviour_logprobs=[0.0, -0.3], versions=[-1, 1], reward=0.0, task_id="t")
    batch = collate([a, b], [0.5, -0.5], pad_id=0)
    assert batch.input_ids.tolist() == [[1, 2, 3], [4, 5, 0]]
    assert batch.attention_mask.tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch.advantages.tolist() == [[0.0, 0.5, 0.5], [0.0, -0.5, 0.0]]
    assert batch.versions.tolist() == [[-1, 0, 0], [-1, 1, -1]]
    assert batch.tokens == 3
