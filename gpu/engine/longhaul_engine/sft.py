"""Supervised warm start: cross-entropy on the loss-mask-1 tokens of validated trajectories, through
the same manifest checks, policy (full / LoRA / freeze, EMA), optimizer resume and atomic versions
as RL. Manifest kind "sft" (see manifest.schema.json); `epochs` passes, `batchSize` samples per
optimizer step (shuffled with `seed`; default one step over all samples per epoch).

Run (from gpu/engine):
    ../../.longhaul/tools/venv/bin/python -m longhaul_engine.sft --manifest PATH [--onnx skip]
"""

import time

import torch

from .manifest import Manifest
from .policy import Policy
from .frozen_prefix import FrozenPrefix
from .train import emit, forward_logprobs, main, micro_batches, pad


def _batches(manifest: Manifest) -> list:
    hp, count = manifest.hyperparameters, len(manifest.samples)
    generator = torch.Generator().manual_seed(hp.seed)
    size = hp.batch_size or count
    batches = []
    for _ in range(hp.epochs):
        order = torch.randperm(count, generator=generator).tolist() if size < count else list(range(count))
        batches.extend(order[i : i + size] for i in range(0, count, size))
    return batches


def sft_step(policy: Policy, manifest: Manifest) -> dict:
    samples, size = manifest.samples, manifest.hyperparameters.micro_batch_size
    losses, norms, tokens, started = [], [], 0, time.time()
    batches = _batches(manifest)
    # Every epoch passes over the same samples: the frozen bottom layers run once per sample.
    prefix = FrozenPrefix(policy.model)
    for number, indices in enumerate(batches):
        loss_tokens = sum(sum(samples[i].loss_mask) for i in indices)
        total = 0.0
        for chunk in micro_batches(indices, size):
            chosen = [samples[i] for i in chunk]
            logp, _ = forward_logprobs(
                policy.model, chosen, with_entropy=False, prefix=prefix, keys=chunk, scored=[s.loss_mask for s in chosen]
            )
            mask = pad([s.loss_mask for s in chosen]).to(logp.dtype)
            loss = -(logp * mask).sum() / max(loss_tokens, 1)
            loss.backward()
            total += float(loss.detach())
            tokens += sum(len(s.token_ids) for s in chosen)
        norms.append(policy.step())
        losses.append(total)
        emit(
            {
                "event": "progress",
                "phase": "update",
                "step": number + 1,
                "of": len(batches),
                "loss": round(total, 5),
                "tokens": tokens,
                "elapsedSeconds": round(time.time() - started, 3),
            }
        )
    seconds = time.time() - started
    return {
        "loss": losses[-1],
        "losses": losses,
        "gradNorm": norms[-1],
        "gradNorms": norms,
        "samples": len(samples),
        "tokens": tokens,
        "lossTokens": sum(sum(s.loss_mask) for s in samples) * manifest.hyperparameters.epochs,
        "updateSeconds": round(seconds, 3),
        "tokensPerSecond": tokens / max(seconds, 1e-9),
        "optimizerSteps": len(batches),
        "frozenPrefixLayers": prefix.depth,
    }


if __name__ == "__main__":
    main(sft_step, "sft", __doc__)
