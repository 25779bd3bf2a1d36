"""Decoupled PPO loss (AReaL) and the token logprobs it needs.

Per loss token t (mask 1), with logprobs of the current weights (new, with grad), of the proximal
policy (prox: the weights before this step's update, recomputed without grad) and of the behaviour
policy that sampled the token (behav, from the manifest):
  ratio r  = exp(new − prox)
  pg       = max(−A·r, −A·clip(r, 1−ε, 1+ε))            (clipped when the second term wins)
  w        = exp(prox − behav)                            (behaviour importance weight, no grad)
             cap mode "mask": w > cap → w = 0; "clamp": w = min(w, cap)
  loss_t   = w · pg − c_ent · entropy_t
Aggregation: "token" = Σ_t loss_t / (loss tokens in the whole batch); "sequence" = Σ_i mean_t∈i
loss_t / (sequences with a loss token in the batch). Denominators are batch totals, so summing
micro-batch losses gives the full-batch loss exactly. Masked tokens (cap "mask") stay in the
denominator, as in AReaL.

Nothing to run: used by train.py; hand-computed tests in tests/test_loss.py.
"""

from dataclasses import dataclass

import torch


def target_logprobs(logits: torch.Tensor, targets: torch.Tensor, with_entropy: bool, entropy_grad: bool = True) -> tuple:
    """log p(target) under each distribution of `logits` [..., V] (targets [...]), and its entropy.

    With entropy_grad False the entropy is a metric only: computed without building a graph, so
    no vocabulary-sized tensor is kept for the backward pass."""
    logits = logits.float()
    normaliser = torch.logsumexp(logits, dim=-1)
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - normaliser
    if not with_entropy:
        return picked, None
    with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
        source, total = (logits, normaliser) if entropy_grad else (logits.detach(), normaliser.detach())
        entropy = total - (torch.softmax(source, dim=-1) * source).sum(-1)
    return picked, entropy


def token_logprobs(logits: torch.Tensor, token_ids: torch.Tensor, with_entropy: bool, entropy_grad: bool = True) -> tuple:
    """logp[b, t] = log p(token t | tokens < t) and the entropy of that distribution; position 0 is 0."""
    picked, entropy = target_logprobs(logits[:, :-1], token_ids[:, 1:], with_entropy, entropy_grad)
    pad = torch.zeros_like(picked[:, :1])
    logp = torch.cat([pad, picked], dim=1)
    return logp, None if entropy is None else torch.cat([pad, entropy], dim=1)


@dataclass
class TokenTerms:
    loss: torch.Tensor  # per-token loss before masking/aggregation
    clipped: torch.Tensor  # bool: the clipped branch was taken
    capped: torch.Tensor  # bool: behaviour weight exceeded the cap
    weight: torch.Tensor  # behaviour importance weight after the cap


def ppo_token_terms(new, prox, behav, advantages, clip_epsilon, cap, cap_mode, entropy=None, entropy_coefficient=0.0) -> TokenTerms:
    ratio = torch.exp(new - prox)
    unclipped = -advantages * ratio
    clipped_loss = -advantages * torch.clamp(ratio, 1.0 - clip_epsilon, 1.0 + clip_epsilon)
    pg = torch.maximum(unclipped, clipped_loss)
    weight = torch.exp(prox - behav).detach()
    capped = torch.zeros_like(weight, dtype=torch.bool) if cap is None else weight > cap
    if cap is not None:
        weight = torch.where(capped, torch.zeros_like(weight), weight) if cap_mode == "mask" else torch.clamp(weight, max=cap)
    loss = weight * pg
    if entropy is not None and entropy_coefficient:
        loss = loss - entropy_coefficient * entropy
    return TokenTerms(loss=loss, clipped=clipped_loss > unclipped, capped=capped, weight=weight)


def aggregate(token_loss, mask, level: str, total_tokens: int, total_sequences: int) -> torch.Tensor:
    """Reduce masked per-token losses of a micro-batch [B, T] to its share of the batch loss."""
    mask = mask.to(token_loss.dtype)
    masked = token_loss * mask
    if level == "token":
        return masked.sum() / max(total_tokens, 1)
    assert level == "sequence", f"aggregation must be token or sequence, got {level}"
    per_sequence = masked.sum(-1) / mask.sum(-1).clamp(min=1)
    return per_sequence.sum() / max(total_sequences, 1)
