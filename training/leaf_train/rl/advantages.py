"""Group-normalised advantages (GRPO-style): reward minus the group mean, optionally over the group std,
plus a group-centred length term that is *not* rescaled.

A group is the set of episodes of one task sampled from the same policy. A group whose outcome rewards are
all equal carries no outcome signal: its outcome advantages are exactly 0 and it is counted in the stats.

Why the length term is added after the normalisation: added to the reward before it (as a reward-shaping
term), the std of a group with equal outcomes is the std of the length term itself, so dividing by it turns
a length spread of 3e-3 into advantages of ±1 whatever λ is: λ cancels. Added after, λ keeps its meaning
(advantage units per unit of ln(1 + L)) and length only breaks ties at the scale λ says.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

GroupStd = Literal["population", "unbiased"]


@dataclass(frozen=True)
class AdvantageStats:
    groups: int
    zero_variance_groups: int


def group_advantages(rewards: list[float], groups: list[str], *, normalize_std: bool = True,
                     std: GroupStd = "population", eps: float = 1e-6,
                     length_terms: list[float] | None = None) -> tuple[list[float], AdvantageStats]:
    """A_i = (r_i − mean) / (std + eps) (or r_i − mean without `normalize_std`) + (ℓ_i − mean ℓ) over i's group.

    `std` is the population (÷ n) or the unbiased (÷ n − 1) group standard deviation. `length_terms` are the
    per-episode length terms ℓ_i (e.g. `losses.log_length_penalty`), centred per group and added unscaled.
    """
    if len(rewards) != len(groups) or (length_terms is not None and len(length_terms) != len(rewards)):
        raise ValueError(f"{len(rewards)} rewards but {len(groups)} group labels"
                         + ("" if length_terms is None else f" and {len(length_terms)} length terms"))
    members: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    advantages = [0.0] * len(rewards)
    flat = 0
    for indices in members.values():
        values = [rewards[i] for i in indices]
        mean = sum(values) / len(values)
        if max(values) - min(values) <= 1e-12:
            flat += 1  # all outcomes equal: no outcome gradient from this group
        else:
            scale = _std(values, mean, std) + eps if normalize_std else 1.0
            for i in indices:
                advantages[i] = (rewards[i] - mean) / scale
        if length_terms is not None:
            centre = sum(length_terms[i] for i in indices) / len(indices)
            for i in indices:
                advantages[i] += length_terms[i] - centre
    return advantages, AdvantageStats(groups=len(members), zero_variance_groups=flat)


def _std(values: list[float], mean: float, kind: GroupStd) -> float:
    n = len(values) - (1 if kind == "unbiased" else 0)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / max(n, 1))
