"""Group-normalised advantages (GRPO-style): reward minus the group mean, optionally over the group std.

A group is the set of episodes of one task sampled from the same policy. A group whose rewards are all equal
carries no learning signal: its advantages are exactly 0 and it is counted in the stats.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass


@dataclass(frozen=True)
class AdvantageStats:
    groups: int
    zero_variance_groups: int


def group_advantages(rewards: list[float], groups: list[str], *, normalize_std: bool = True,
                     eps: float = 1e-6) -> tuple[list[float], AdvantageStats]:
    """A_i = r_i − mean(group(i)), divided by the group's (population) std + eps when `normalize_std`."""
    if len(rewards) != len(groups):
        raise ValueError(f"{len(rewards)} rewards but {len(groups)} group labels")
    members: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    advantages = [0.0] * len(rewards)
    flat = 0
    for indices in members.values():
        values = [rewards[i] for i in indices]
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        if max(values) - min(values) <= 1e-12:
            flat += 1  # all equal: no gradient from this group
            continue
        for i in indices:
            advantages[i] = (rewards[i] - mean) / (std + eps) if normalize_std else rewards[i] - mean
    return advantages, AdvantageStats(groups=len(members), zero_variance_groups=flat)
