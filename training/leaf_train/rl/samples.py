"""Token samples: one training sample per episode, read straight from the engine's token log.

The token log (`leaf_cli.llm.messages.TokenLog`) holds the exact ids the engine evaluated and sampled, the
loss mask (1 on sampled tokens only), the behaviour log-probabilities recorded at sampling time and the
policy version of each sampled token. Nothing is re-tokenized here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from leaf_cli.agent.trajectory import Trajectory

if TYPE_CHECKING:
    import torch


@dataclass
class TokenSample:
    """One episode as the trainer sees it."""

    ids: list[int]
    loss_mask: list[int]
    behaviour_logprobs: list[float]
    versions: list[int]
    reward: float
    task_id: str
    exit_reason: str | None = None
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def length(self) -> int:
        """The episode's assistant-token length: how many tokens the policy sampled."""
        return sum(self.loss_mask)

    def oldest_version(self) -> int:
        """The oldest policy version that sampled a token of this episode (-1 when nothing was sampled)."""
        sampled = [v for v, m in zip(self.versions, self.loss_mask) if m]
        return min(sampled) if sampled else -1


def sample_from_trajectory(trajectory: Trajectory, reward: float, task_id: str) -> TokenSample:
    """The training sample of one episode. Raises ValueError when the engine kept no token log."""
    log = trajectory.token_log
    if log is None:
        raise ValueError("the trajectory has no token log: RL needs a token-level engine (transformers, server)")
    if not (len(log.ids) == len(log.mask) == len(log.logprobs) == len(log.versions)):
        raise ValueError("the token log is inconsistent: ids, mask, logprobs and versions differ in length")
    if log.mask and log.mask[0]:
        raise ValueError("the token log starts with a sampled token; the first token must be prompt")
    return TokenSample(ids=list(log.ids), loss_mask=list(log.mask), behaviour_logprobs=list(log.logprobs),
                       versions=list(log.versions), reward=float(reward), task_id=task_id,
                       exit_reason=trajectory.exit_reason)


@dataclass
class Batch:
    """Right-padded tensors `[batch, tokens]`. `loss_mask`, `behaviour_logp`, `versions`, `advantages` are
    aligned on the target token (position t describes ids[t], predicted from position t−1)."""

    input_ids: "torch.Tensor"
    attention_mask: "torch.Tensor"
    loss_mask: "torch.Tensor"
    behaviour_logp: "torch.Tensor"
    versions: "torch.Tensor"
    advantages: "torch.Tensor"

    @property
    def tokens(self) -> int:
        return int(self.loss_mask.sum().item())


def collate(samples: list[TokenSample], advantages: list[float], pad_id: int) -> Batch:
    """Pad samples into one batch and broadcast each episode's advantage to its sampled tokens."""
    import torch

    if len(samples) != len(advantages):
        raise ValueError(f"{len(samples)} samples but {len(advantages)} advantages")
    width = max(len(s.ids) for s in samples)

    def pad(rows: list[list], value: float | int, dtype: torch.dtype) -> torch.Tensor:
        return torch.tensor([r + [value] * (width - len(r)) for r in rows], dtype=dtype)

    mask = pad([s.loss_mask for s in samples], 0, torch.float32)
    adv = torch.tensor(advantages, dtype=torch.float32)[:, None] * mask
    return Batch(
        input_ids=pad([s.ids for s in samples], pad_id, torch.long),
        attention_mask=pad([[1] * len(s.ids) for s in samples], 0, torch.long),
        loss_mask=mask,
        behaviour_logp=pad([s.behaviour_logprobs for s in samples], 0.0, torch.float32),
        versions=pad([s.versions for s in samples], -1, torch.long),
        advantages=adv,
    )
