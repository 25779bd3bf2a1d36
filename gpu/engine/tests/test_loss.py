"""Decoupled PPO loss against numbers worked out by hand (ε = 0.2, cap 5).

Five tokens, prox logprob 0 everywhere, so ratio r = exp(new) and behaviour weight w = exp(−behav):
  t1: A=+1, r=1.5 → −A·r=−1.5, −A·clip=−1.2 → pg −1.2 (clipped, upper side), w=1
  t2: A=+1, r=0.5 → −0.5 vs −0.8 → pg −0.5 (not clipped: A>0 never clips low), w=2
  t3: A=−1, r=0.5 → 0.5 vs 0.8 → pg 0.8 (clipped, lower side), w=6 > cap
  t4: A=−1, r=1.5 → 1.5 vs 1.2 → pg 1.5 (not clipped: A<0 never clips high), w=0.5
  t5: A=+2, r=1.1 → −2.2 vs −2.2 → pg −2.2 (inside the band), w=1, loss mask 0
"""

import math

import pytest
import torch

from longhaul_engine.loss import aggregate, ppo_token_terms, token_logprobs

NEW = torch.log(torch.tensor([[1.5, 0.5, 0.5, 1.5, 1.1]], dtype=torch.float64))
PROX = torch.zeros(1, 5, dtype=torch.float64)
BEHAV = -torch.log(torch.tensor([[1.0, 2.0, 6.0, 0.5, 1.0]], dtype=torch.float64))
ADV = torch.tensor([[1.0, 1.0, -1.0, -1.0, 2.0]], dtype=torch.float64)
MASK = torch.tensor([[1, 1, 1, 1, 0]])


def terms(mode="mask", cap=5.0, new=NEW, **kwargs):
    return ppo_token_terms(new, PROX, BEHAV, ADV, 0.2, cap, mode, **kwargs)


def test_ratios_are_clipped_on_both_sides_only_against_the_advantage():
    t = terms(cap=None)
    assert t.clipped.tolist() == [[True, False, True, False, False]]
    assert t.loss[0].tolist() == pytest.approx([-1.2, -1.0, 4.8, 0.75, -2.2])


def test_mask_mode_zeroes_tokens_whose_behaviour_weight_exceeds_the_cap():
    t = terms(mode="mask")
    assert t.capped.tolist() == [[False, False, True, False, False]]
    assert t.weight[0].tolist() == pytest.approx([1.0, 2.0, 0.0, 0.5, 1.0])
    assert t.loss[0].tolist() == pytest.approx([-1.2, -1.0, 0.0, 0.75, -2.2])


def test_clamp_mode_cuts_the_behaviour_weight_to_the_cap():
    t = terms(mode="clamp")
    assert t.weight[0].tolist() == pytest.approx([1.0, 2.0, 5.0, 0.5, 1.0])
    assert t.loss[0].tolist() == pytest.approx([-1.2, -1.0, 4.0, 0.75, -2.2])


def test_token_aggregation_divides_by_the_loss_tokens_of_the_batch_and_ignores_masked_ones():
    # mask: (−1.2 − 1.0 + 0 + 0.75) / 4 = −0.3625 ; clamp: (−1.2 − 1.0 + 4.0 + 0.75) / 4 = 0.6375
    assert aggregate(terms("mask").loss, MASK, "token", 4, 1).item() == pytest.approx(-0.3625)
    assert aggregate(terms("clamp").loss, MASK, "token", 4, 1).item() == pytest.approx(0.6375)


def test_sequence_aggregation_averages_each_sequence_first():
    # two sequences [t1 t2 t3] and [t4 (t5 masked) pad]: ((−1.2 − 1.0 + 0)/3 + 0.75/1) / 2 = 0.008333…
    loss = terms("mask").loss
    two = torch.stack([loss[0, :3], torch.cat([loss[0, 3:], torch.zeros(1, dtype=loss.dtype)])])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    assert aggregate(two, mask, "sequence", 4, 2).item() == pytest.approx((-2.2 / 3 + 0.75) / 2)


def test_gradients_vanish_on_clipped_or_masked_tokens_and_scale_by_the_behaviour_weight():
    new = NEW.clone().requires_grad_(True)
    aggregate(terms("mask", new=new).loss, MASK, "token", 1, 1).backward()
    # t1 clipped → 0; t2 d(−A·r)/d new = −A·r·w = −0.5·2 = −1; t3 capped → 0; t4 r·w = 1.5·0.5 = 0.75; t5 masked → 0
    assert new.grad[0].tolist() == pytest.approx([0.0, -1.0, 0.0, 0.75, 0.0])


def test_the_entropy_bonus_is_subtracted_per_token():
    entropy = torch.full((1, 5), 2.0, dtype=torch.float64)
    t = terms("mask", entropy=entropy, entropy_coefficient=0.1)
    assert t.loss[0].tolist() == pytest.approx([-1.4, -1.2, -0.2, 0.55, -2.4])


def test_on_policy_tokens_have_ratio_one_and_weight_one():
    t = ppo_token_terms(PROX, PROX, PROX, ADV, 0.2, 5.0, "mask")
    assert t.loss[0].tolist() == pytest.approx([-1.0, -1.0, 1.0, 1.0, -2.0])
    assert not t.clipped.any() and not t.capped.any()


def test_token_logprobs_and_entropy_of_a_two_word_vocabulary():
    logits = torch.tensor([[[0.0, 0.0], [math.log(3.0), 0.0], [5.0, -5.0]]])
    logp, entropy = token_logprobs(logits, torch.tensor([[1, 0, 0]]), with_entropy=True)
    # position 1: p(0) = 1/2; position 2: p(0) = 3/4
    assert logp[0].tolist() == pytest.approx([0.0, math.log(0.5), math.log(0.75)])
    assert entropy[0].tolist() == pytest.approx([0.0, math.log(2.0), -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))])
