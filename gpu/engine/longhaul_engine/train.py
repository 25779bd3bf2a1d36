"""One decoupled-PPO training step (AReaL): manifest in, new policy version dir out.

Run (from gpu/engine):
    ../../.longhaul/tools/venv/bin/python -m longhaul_engine.train --manifest PATH [--onnx skip]

Order: validate the manifest and both dirs (refusals happen here, before any compute) → load the
base version (weights, optimizer, adapter, EMA) → proximal logprobs with the current weights (the first
minibatch's own forward supplies its samples'; a no-grad pass the later minibatches', none at the default
of one) → for each of `ppo.minibatches` slices: micro-batched forward/backward of the decoupled PPO loss,
gradient clip, AdamW, EMA → write the version atomically (with the ONNX export when the exporter is
importable). stdout carries one JSON line per micro-batch
({"event": "progress", ...}) and a final {"event": "done", ...} or {"event": "error", "type", "message"};
the exit code is 0, or 2 for a refusal.
"""

import argparse
import json
import math
import os
import resource
import sys
import threading
import time
from pathlib import Path

import torch

from .advantages import group_advantages, token_advantages
from .checkpoint import load_model, write_version
from .errors import EngineError
from .frozen_prefix import FrozenPrefix
from .loss import aggregate, ppo_token_terms, target_logprobs, token_logprobs
from .manifest import Manifest, load_manifest
from .policy import Policy, load_policy


def emit(event: dict) -> None:
    print(json.dumps(event), flush=True)


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def micro_batches(indices: list, size: int) -> list:
    return [indices[i : i + size] for i in range(0, len(indices), size)]


def pad(rows: list, value=0, dtype=torch.long) -> torch.Tensor:
    width = max(len(r) for r in rows)
    out = torch.full((len(rows), width), value, dtype=dtype)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.as_tensor(row, dtype=dtype)
    return out


def _scored_logprobs(model, samples: list, ids, attention, scored, with_entropy, entropy_grad, prefix, keys) -> tuple:
    """forward_logprobs on the scored positions only: the head (49,152 × 576 for SmolLM2, more work per
    token than four decoder layers) and the softmax run where a loss token is predicted, not on the
    prompt and observations (4 of 5 tokens in the demo's RL batches). Elsewhere logp and entropy are 0."""
    if prefix is not None and prefix.depth > 0 and keys is not None:
        hidden = prefix.final_hidden(keys, ids, attention)
    else:
        hidden = model.model(input_ids=ids, attention_mask=attention, use_cache=False).last_hidden_state
    target = pad(scored)[:, : ids.shape[1]].bool()
    target[:, 0] = False  # nothing predicts the first token
    rows, cols = target.nonzero(as_tuple=True)
    logits = model.get_output_embeddings()(hidden[rows, cols - 1]).float()
    temperatures = torch.tensor([getattr(s, "temperature", 1.0) for s in samples], dtype=torch.float32)
    if bool((temperatures != 1.0).any()):
        logits = logits / temperatures[rows].unsqueeze(-1)
    picked, values = target_logprobs(logits, ids[rows, cols], with_entropy, entropy_grad)

    def scatter(values_at_rows):
        return torch.zeros(ids.shape, dtype=values_at_rows.dtype).index_put((rows, cols), values_at_rows)

    return scatter(picked), None if values is None else scatter(values)


def forward_logprobs(
    model,
    samples: list,
    with_entropy: bool,
    entropy_grad: bool = False,
    prefix: FrozenPrefix | None = None,
    keys: list | None = None,
    scored: list | None = None,
) -> tuple:
    """Logprobs (and entropy) of each sample's own tokens under `model`; [B, T] right-padded.

    Logits are divided by each sample's temperature, the one its behaviour logprobs were sampled at,
    so that on-policy tokens have behaviour weight 1 at any temperature (AReaL does the same). With a
    `prefix` (and each sample's `keys` within the step) the frozen bottom layers run once per sample;
    with `scored` (a 0/1 row per sample, e.g. its loss mask) only those positions are computed."""
    ids = pad([s.token_ids for s in samples])
    attention = pad([[1] * len(s.token_ids) for s in samples])
    if scored is not None and hasattr(model, "model") and hasattr(model, "get_output_embeddings"):
        return _scored_logprobs(model, samples, ids, attention, scored, with_entropy, entropy_grad, prefix, keys)
    if prefix is not None and prefix.depth > 0 and keys is not None:
        logits = model.get_output_embeddings()(prefix.final_hidden(keys, ids, attention))
    else:
        logits = model(input_ids=ids, attention_mask=attention, use_cache=False).logits
    temperatures = [getattr(s, "temperature", 1.0) for s in samples]
    if any(t != 1.0 for t in temperatures):
        logits = logits.float() / torch.tensor(temperatures, dtype=torch.float32).view(-1, 1, 1)
    return token_logprobs(logits, ids, with_entropy, entropy_grad)


def proximal_logprobs(model, samples: list, size: int, prefix: FrozenPrefix | None = None, indices: list | None = None) -> dict:
    """π_prox: the current weights' logprobs before any update, a 1-D tensor per sample index (of `indices`,
    default all)."""
    result = {}
    chunks = micro_batches(list(range(len(samples))) if indices is None else list(indices), size)
    with torch.no_grad():
        for number, chunk in enumerate(chunks):
            chosen = [samples[i] for i in chunk]
            logp, _ = forward_logprobs(model, chosen, with_entropy=False, prefix=prefix, keys=chunk, scored=[s.loss_mask for s in chosen])
            result.update((i, logp[row, : len(samples[i].token_ids)].clone()) for row, i in enumerate(chunk))
            emit({"event": "progress", "phase": "proximal", "microBatch": number + 1, "of": len(chunks)})
    return result


def _micro_step(
    policy: Policy, manifest: Manifest, chunk: list, prox: dict, advantages: list, totals: tuple, stats: dict, prefix: FrozenPrefix
) -> None:
    ppo, samples = manifest.hyperparameters.ppo, [manifest.samples[i] for i in chunk]
    masks = [s.loss_mask for s in samples]
    logp, entropy = forward_logprobs(
        policy.model, samples, with_entropy=True, entropy_grad=bool(ppo.entropy_coefficient), prefix=prefix, keys=chunk, scored=masks
    )
    mask = pad(masks)
    on = mask.bool()
    # No update has happened yet for a sample without a separate π_prox (the first minibatch): this forward
    # ran on the weights π_prox means, so its logprobs, detached, are π_prox (0 off the loss mask, like the pass's).
    proximal = pad([prox[i] for i in chunk], 0.0, torch.float32) if chunk[0] in prox else logp.detach().float()
    behaviour = pad([s.behaviour_logprobs for s in samples], 0.0, torch.float32)
    terms = ppo_token_terms(
        logp,
        proximal,
        # Off the loss mask logp and π_prox are not computed (0): the behaviour weight there is 1, not exp(−π_behave).
        torch.where(on, behaviour, proximal),
        pad([advantages[i] for i in chunk], 0.0, torch.float32),
        ppo.clip_epsilon,
        ppo.importance_cap,
        ppo.importance_cap_mode,
        entropy,
        ppo.entropy_coefficient,
    )
    loss = aggregate(terms.loss, mask, ppo.aggregation, *totals)
    loss.backward()
    # log of the behaviour weight π_prox / π_behave per loss token: 0 on-policy, whatever the rollout temperature.
    log_weight = proximal - behaviour
    if bool(on.any()):
        stats["maxAbsLogBehaviourWeight"] = max(stats["maxAbsLogBehaviourWeight"], float(log_weight[on].abs().max()))
    stats["loss"] += float(loss.detach())
    stats["clipped"] += int((terms.clipped & on).sum())
    stats["capped"] += int((terms.capped & on).sum())
    stats["entropy"] += float(entropy.detach()[on].sum())
    stats["lossTokens"] += int(on.sum())
    stats["tokens"] += sum(len(s.token_ids) for s in samples)


def rl_step(policy: Policy, manifest: Manifest, reuse_update_forward: bool = True) -> dict:
    """One step. `reuse_update_forward` False runs the separate π_prox pass for every sample (the reference
    the tests compare the reuse against)."""
    hp, samples = manifest.hyperparameters, manifest.samples
    ppo, size = hp.ppo, hp.micro_batch_size
    started = time.time()
    prefix = FrozenPrefix(policy.model)
    slices = [list(range(len(samples)))[k :: ppo.minibatches] for k in range(ppo.minibatches)]
    # π_prox is the weights before any update, which is what the first minibatch's forward runs on: only
    # later minibatches' samples need the no-grad pass (none at one minibatch; it cost 22 % of a
    # full-parameter step in the engine benchmark, 35–40 % in session 24's RL steps).
    first = set(slices[0]) if reuse_update_forward else set()
    prox = proximal_logprobs(policy.model, samples, size, prefix, [i for i in range(len(samples)) if i not in first])
    prox_seconds = time.time() - started
    sequence_advantages = group_advantages([s.reward for s in samples], [s.group_id for s in samples], ppo.group_normalise, ppo.group_scale)
    advantages = [token_advantages(a, s.loss_mask, s.turn_indices, ppo.turn_discount) for a, s in zip(sequence_advantages, samples)]
    stats = dict.fromkeys(["loss", "clipped", "capped", "entropy", "lossTokens", "tokens", "maxAbsLogBehaviourWeight"], 0)
    norms, update_started = [], time.time()
    for number, indices in enumerate(slices):
        totals = (sum(sum(samples[i].loss_mask) for i in indices), sum(1 for i in indices if any(samples[i].loss_mask)))
        chunks = micro_batches(indices, size)
        for m, chunk in enumerate(chunks):
            _micro_step(policy, manifest, chunk, prox, advantages, totals, stats, prefix)
            emit(
                {
                    "event": "progress",
                    "phase": "update",
                    "minibatch": number + 1,
                    "of": len(slices),
                    "microBatch": m + 1,
                    "microBatches": len(chunks),
                    "tokens": stats["tokens"],
                    "elapsedSeconds": round(time.time() - started, 3),
                }
            )
        norms.append(policy.step())
        if not math.isfinite(norms[-1]):
            emit({"event": "warning", "message": f"minibatch {number + 1}: gradient norm is {norms[-1]}; update skipped"})
    update_seconds = time.time() - update_started
    loss_tokens = max(stats["lossTokens"], 1)
    return {
        "loss": stats["loss"] / len(slices),
        "clipFraction": stats["clipped"] / loss_tokens,
        "importanceCappedFraction": stats["capped"] / loss_tokens,
        # Largest |log(π_prox / π_behave)| over loss tokens: ~0 for fresh on-policy rollouts (float rounding).
        "maxAbsLogBehaviourWeight": stats["maxAbsLogBehaviourWeight"],
        "entropy": stats["entropy"] / loss_tokens,
        # JSON has no NaN/Infinity: a non-finite norm (its update skipped) is reported as null.
        "gradNorm": norms[-1] if math.isfinite(norms[-1]) else None,
        "gradNorms": [n if math.isfinite(n) else None for n in norms],
        "skippedUpdates": sum(1 for n in norms if not math.isfinite(n)),
        "rewardMean": sum(s.reward for s in samples) / len(samples),
        "samples": len(samples),
        "tokens": stats["tokens"],
        "lossTokens": stats["lossTokens"],
        "proximalSeconds": round(prox_seconds, 3),
        # Samples whose π_prox came from the first minibatch's own forward instead of the separate pass.
        "proximalFromUpdate": len(first),
        "updateSeconds": round(update_seconds, 3),
        "tokensPerSecond": stats["tokens"] / max(update_seconds, 1e-9),
        "optimizerSteps": len(slices),
        # Leading decoder layers run once per sample (no trainable parameter in them): frozen_prefix.py.
        "frozenPrefixLayers": prefix.depth,
    }


def export_for_serving(version_dir: Path) -> dict:
    """The one coupling with the exporter (longhaul_engine.export): ONNX of the served weights."""
    try:
        from .export import export_onnx
    except ImportError as error:
        print(f"ONNX export skipped: exporter not available ({error})", file=sys.stderr)
        return {"onnx": "skipped", "reason": str(error)}
    export_onnx(load_model(version_dir), version_dir / "model.onnx")
    label_export_format(version_dir)
    return {"onnx": "model.onnx"}


def label_export_format(version_dir: Path) -> None:
    """The version's longhaul-model.json is its base's copy; its graph is this exporter's, so it says this format
    (a base prepared by an older exporter said 3 while its trained versions carried format-4 graphs)."""
    from .prepare import FORMAT_VERSION, MANIFEST

    path = version_dir / MANIFEST
    if not path.is_file():
        return
    manifest = json.loads(path.read_text())
    if manifest.get("format") != FORMAT_VERSION:
        path.write_text(json.dumps({**manifest, "format": FORMAT_VERSION}, indent=2) + "\n")


def publish(policy: Policy, manifest: Manifest, metrics: dict, onnx: bool) -> dict:
    started = time.time()
    files = policy.files(
        policy_version=manifest.output_version, run_id=manifest.run_id, step=manifest.step, kind=manifest.kind, metrics=metrics
    )
    extra = {}
    write_version(
        manifest.output_dir,
        manifest.base_dir,
        files,
        before_publish=(lambda temp: extra.update(export_for_serving(temp))) if onnx else None,
    )
    metrics.update(extra, saveSeconds=round(time.time() - started, 3), peakRssBytes=peak_rss_bytes())
    temp = manifest.output_dir / ".metrics.json.tmp"
    temp.write_text(json.dumps(metrics, indent=2) + "\n")
    temp.replace(manifest.output_dir / "metrics.json")  # final numbers (save time, ONNX), atomically
    return metrics


def run(manifest_path: str, onnx: bool, step_fn=rl_step, expected_kind: str = "rl") -> dict:
    """Validate, train, publish. Raises EngineError on a refusal (nothing written)."""
    manifest = load_manifest(manifest_path)
    if manifest.kind != expected_kind:
        from .errors import InvalidBatch

        raise InvalidBatch(f"kind is {manifest.kind}, this command trains kind {expected_kind}")
    emit(
        {
            "event": "start",
            "kind": manifest.kind,
            "runId": manifest.run_id,
            "step": manifest.step,
            "samples": len(manifest.samples),
            "baseVersion": manifest.base_version,
        }
    )
    policy = load_policy(manifest.base_dir, manifest.hyperparameters)
    metrics = step_fn(policy, manifest)
    metrics.update(
        policyVersion=manifest.output_version,
        optimizerResumed=policy.resumed,
        trainableParameters=sum(p.numel() for p in policy.parameters.values()),
    )
    return publish(policy, manifest, metrics, onnx)


def exit_with_parent(interval: float = 0.5) -> None:
    """Exit when the process that started the engine dies (kill -9 of the gpu-train worker): an orphan
    would go on training and could publish into the folder the retried step has just cleared."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def main(step_fn=rl_step, expected_kind: str = "rl", doc: str = __doc__) -> None:
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--manifest", required=True)
    parser.add_argument(
        "--onnx", choices=["auto", "skip"], default="auto", help="export ONNX for the local policy (auto: when the exporter is importable)"
    )
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    args = parser.parse_args()
    exit_with_parent()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        metrics = run(args.manifest, args.onnx == "auto", step_fn, expected_kind)
    except EngineError as error:
        emit(error.to_json())
        raise SystemExit(2)
    emit({"event": "done", "metrics": metrics})


if __name__ == "__main__":
    main()
