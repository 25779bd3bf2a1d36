"""Advantages against hand-computed values."""

import pytest

from longhaul_engine.advantages import EPSILON, group_advantages, token_advantages


def test_group_normalised_advantages_use_each_groups_mean_and_population_std():
    rewards = [1, 0, 0, 1, 3, 1, 2, 2]
    groups = ["a", "a", "a", "a", "b", "b", "c", "c"]
    # a: mean 0.5, std 0.5 → ±0.5/(0.5+ε); b: mean 2, std 1 → ±1/(1+ε); c: all equal → 0
    a, b = 0.5 / (0.5 + EPSILON), 1 / (1 + EPSILON)
    assert group_advantages(rewards, groups, True) == pytest.approx([a, -a, -a, a, b, -b, 0, 0], abs=1e-12)


def test_group_scale_none_keeps_the_reward_minus_the_group_mean():
    rewards = [1, 0, 0, 0, -0.1, -0.1]
    groups = ["a", "a", "b", "b", "b", "b"]
    # a: mean 0.5 → ±0.5 (std would make it ±1 too); b: mean −0.05 → +0.05, +0.05, −0.05, −0.05 (std: ±1)
    assert group_advantages(rewards, groups, True, "none") == pytest.approx([0.5, -0.5, 0.05, 0.05, -0.05, -0.05], abs=1e-12)
    assert group_advantages(rewards, groups, True, "std")[2] == pytest.approx(1.0, abs=1e-4)


def test_an_unknown_group_scale_is_refused():
    with pytest.raises(ValueError, match="scale must be one of"):
        group_advantages([1, 0], ["a", "a"], True, "max")


def test_without_normalisation_the_advantage_is_the_reward():
    assert group_advantages([0.25, -1.0], ["a", "b"], False) == [0.25, -1.0]


def test_turn_discount_reaches_earlier_turns_with_gamma_to_the_distance_from_the_last_turn():
    # A = 2, γ = 0.5, last loss turn 2: turn 0 → 2·0.25, turn 1 → 2·0.5, turn 2 → 2; mask-0 tokens → 0
    values = token_advantages(2.0, [0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 2, 2], 0.5)
    assert values.tolist() == pytest.approx([0, 0.5, 0, 1.0, 0, 2.0])


def test_gamma_one_gives_every_loss_token_the_sequence_advantage():
    assert token_advantages(-1.5, [0, 1, 1], [0, 0, 3], 1.0).tolist() == [0.0, -1.5, -1.5]
