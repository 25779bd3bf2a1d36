"""Advantages for decoupled PPO without a critic (AReaL/GRPO style, γ = λ = 1 by default).

Sequence advantage: group-normalised, A_i = (r_i − mean_g) / (std_g + 1e-6) with the population
std of the rewards in sample i's group g (scale "std", GRPO), or A_i = r_i − mean_g (scale "none",
Dr. GRPO: a group's advantages keep the size of its reward differences, so a small reward gap stays
small); with normalisation off, A_i = r_i. Optional turn-level
discount γ: a loss token in turn k of a sample whose last loss turn is K gets A_i · γ^(K−k), so the
outcome reward reaches early turns discounted. Tokens with loss mask 0 get advantage 0.

Nothing to run: used by train.py; tested in tests/test_advantages.py.
"""

from collections import defaultdict

import torch

EPSILON = 1e-6


GROUP_SCALES = ("std", "none")


def group_advantages(rewards: list, group_ids: list, normalise: bool, scale: str = "std") -> list:
    """One advantage per sample."""
    if scale not in GROUP_SCALES:
        raise ValueError(f"scale must be one of {GROUP_SCALES}, got {scale!r}")
    if not normalise:
        return [float(r) for r in rewards]
    groups = defaultdict(list)
    for reward, group in zip(rewards, group_ids):
        groups[group].append(float(reward))
    stats = {}
    for group, values in groups.items():
        mean = sum(values) / len(values)
        std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        stats[group] = (mean, std)
    if scale == "none":
        return [float(r) - stats[g][0] for r, g in zip(rewards, group_ids)]
    return [(float(r) - stats[g][0]) / (stats[g][1] + EPSILON) for r, g in zip(rewards, group_ids)]


def token_advantages(advantage: float, loss_mask: list, turn_indices: list | None, gamma: float) -> torch.Tensor:
    """Per-token advantages of one sample (float32, length = number of tokens)."""
    mask = torch.tensor(loss_mask, dtype=torch.float32)
    if gamma == 1.0 or turn_indices is None or not any(loss_mask):
        return mask * advantage
    turns = torch.tensor(turn_indices, dtype=torch.float64)
    last = max(t for t, m in zip(turn_indices, loss_mask) if m)
    discount = torch.pow(torch.tensor(gamma, dtype=torch.float64), (last - turns).clamp(min=0))
    return (mask.double() * advantage * discount).float()
