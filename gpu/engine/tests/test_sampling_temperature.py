"""Behaviour weights at any rollout temperature, non-finite gradients, and minibatches > 1.

A rollout sampled at temperature T records log-softmax(logits / T) per token (gpu/infer/sampling.ts,
top-p 1); the engine divides its logits by the sample's `temperature` so that on-policy tokens have
behaviour weight exp(logp_now - logp_behave) = 1. Without the division the weight is far from 1."""

import math

import pytest
import torch

from engine_fixtures import make_tiny_model_dir, manifest, write_manifest
from longhaul_engine.checkpoint import load_model
from longhaul_engine.manifest import load_manifest
from longhaul_engine.policy import load_policy
from longhaul_engine.train import forward_logprobs, rl_step, run

TOLERANCE = 1e-4  # float32 forward passes of the same weights, batched and padded differently


def sampled_at(model_dir, temperature: float, prompt: list, length: int, seed: int) -> dict:
    """One rollout sampled from the model at `temperature`, with its behaviour logprobs as inference records them."""
    model, generator = load_model(model_dir), torch.Generator().manual_seed(seed)
    tokens, logprobs = list(prompt), [0.0] * len(prompt)
    with torch.no_grad():
        for _ in range(length):
            logp = torch.log_softmax(model(input_ids=torch.tensor([tokens])).logits[0, -1].float() / temperature, -1)
            token = int(torch.multinomial(logp.exp(), 1, generator=generator))
            tokens.append(token)
            logprobs.append(float(logp[token]))
    return {"tokens": tokens, "logprobs": logprobs}


def rl_sample_at(model_dir, sample_id: str, group: str, reward: float, temperature: float | None, seed: int) -> dict:
    rollout = sampled_at(model_dir, temperature or 1.0, [1, 10 + seed % 7], 6, seed)
    n, prompt = len(rollout["tokens"]), 2
    sample = {
        "id": sample_id,
        "groupId": group,
        "reward": reward,
        "tokenIds": rollout["tokens"],
        "lossMask": [0] * prompt + [1] * (n - prompt),
        "behaviourLogprobs": rollout["logprobs"],
        "policyVersions": [-1] * prompt + [0] * (n - prompt),
        "turnIndices": [0] * n,
    }
    if temperature is not None:
        sample["temperature"] = temperature
    return sample


@pytest.mark.parametrize("temperature", [0.5, 0.7, 1.6])
def test_on_policy_tokens_have_behaviour_weight_one_at_the_rollout_temperature(tmp_path, temperature):
    model_dir = make_tiny_model_dir(tmp_path / "v0")
    samples = [rl_sample_at(model_dir, f"s{i}", f"g{i // 2}", float(i % 2), temperature, seed=i) for i in range(4)]
    loaded = load_manifest(str(write_manifest(tmp_path / "m.json", manifest(model_dir, tmp_path / "v1", samples=samples))))
    assert [s.temperature for s in loaded.samples] == [temperature] * 4
    with torch.no_grad():
        logp, _ = forward_logprobs(load_model(model_dir), loaded.samples, with_entropy=False)
    weights, unscaled = [], []
    for row, sample in enumerate(loaded.samples):
        for t, on in enumerate(sample.loss_mask):
            if on:
                weights.append(math.exp(float(logp[row, t]) - sample.behaviour_logprobs[t]))
    assert max(abs(w - 1.0) for w in weights) < TOLERANCE, weights
    # The same tokens scored at T = 1 (what the engine did before it carried the temperature) are off-policy.
    plain = [s.__class__(**{**s.__dict__, "temperature": 1.0}) for s in loaded.samples]
    with torch.no_grad():
        logp_plain, _ = forward_logprobs(load_model(model_dir), plain, with_entropy=False)
    for row, sample in enumerate(plain):
        for t, on in enumerate(sample.loss_mask):
            if on:
                unscaled.append(math.exp(float(logp_plain[row, t]) - sample.behaviour_logprobs[t]))
    assert max(abs(w - 1.0) for w in unscaled) > 0.05
    metrics = run(str(write_manifest(tmp_path / "m.json", manifest(model_dir, tmp_path / "v1", samples=samples))), onnx=False)
    assert metrics["importanceCappedFraction"] == 0.0 and metrics["clipFraction"] == 0.0
    assert metrics["maxAbsLogBehaviourWeight"] < TOLERANCE


def test_a_sample_without_temperature_is_scored_at_one(tmp_path):
    model_dir = make_tiny_model_dir(tmp_path / "v0")
    samples = [rl_sample_at(model_dir, f"s{i}", f"g{i // 2}", float(i % 2), None, seed=i) for i in range(4)]
    loaded = load_manifest(str(write_manifest(tmp_path / "m.json", manifest(model_dir, tmp_path / "v1", samples=samples))))
    assert {s.temperature for s in loaded.samples} == {1.0}
    metrics = run(str(write_manifest(tmp_path / "m.json", manifest(model_dir, tmp_path / "v1", samples=samples))), onnx=False)
    assert metrics["importanceCappedFraction"] == 0.0 and metrics["clipFraction"] == 0.0


@pytest.mark.parametrize("bad", [0, -1, 6])
def test_a_temperature_outside_the_range_is_refused_naming_the_sample(tmp_path, bad):
    from longhaul_engine.errors import EngineError

    model_dir = make_tiny_model_dir(tmp_path / "v0")
    samples = [rl_sample_at(model_dir, f"s{i}", f"g{i // 2}", float(i % 2), 1.0, seed=i) for i in range(4)]
    samples[1]["temperature"] = bad
    with pytest.raises(EngineError, match=r"samples\[1\].*temperature"):
        load_manifest(str(write_manifest(tmp_path / "m.json", manifest(model_dir, tmp_path / "v1", samples=samples))))


def test_a_gradient_that_is_not_finite_is_skipped_and_reported(tmp_path):
    model_dir = make_tiny_model_dir(tmp_path / "v0")
    loaded = load_manifest(str(write_manifest(tmp_path / "m.json", manifest(model_dir, tmp_path / "v1"))))
    policy = load_policy(model_dir, loaded.hyperparameters)
    before = {name: p.detach().clone() for name, p in policy.parameters.items()}
    for parameter in policy.parameters.values():
        parameter.grad = torch.full_like(parameter, float("nan"))
    norm = policy.step()
    assert math.isnan(norm) and policy.optimizer_steps == 0
    assert all(torch.equal(before[name], p) for name, p in policy.parameters.items())
    assert all(p.grad is None for p in policy.parameters.values())
    # Through the step: a NaN loss gives a NaN gradient; the update is skipped, the metrics say so (JSON-safe).
    # The head: the step computes logits only where a loss token is predicted (train.py _scored_logprobs).
    head = policy.model.get_output_embeddings()
    original = head.forward

    def poisoned(*args, **kwargs):
        return original(*args, **kwargs) * float("nan")

    head.forward = poisoned
    metrics = rl_step(policy, loaded)
    assert metrics["skippedUpdates"] == 1 and metrics["gradNorm"] is None and metrics["gradNorms"] == [None]
    assert all(torch.equal(before[name], p) for name, p in policy.parameters.items())


def test_the_first_of_two_minibatches_is_the_update_of_that_minibatch_alone(tmp_path):
    """minibatches = 2 splits the batch by index (k::2); π_prox and the advantages come from the whole
    batch before any update. With the samples ordered g0, g1, g0, g1 each minibatch holds whole groups,
    so its first optimizer step equals a one-minibatch step over those samples alone: same gradient
    norm, same weights after it. The second minibatch then starts from the updated weights."""
    model_dir = make_tiny_model_dir(tmp_path / "v0")
    samples = [rl_sample_at(model_dir, f"s{i}", f"g{i % 2}", float(i // 2), 1.0, seed=i) for i in range(4)]
    two = load_manifest(str(write_manifest(tmp_path / "two.json", manifest(model_dir, tmp_path / "a", samples=samples, minibatches=2))))
    alone = load_manifest(
        str(write_manifest(tmp_path / "one.json", manifest(model_dir, tmp_path / "b", samples=[samples[0], samples[2]], minibatches=1)))
    )
    policy_two, policy_alone = load_policy(model_dir, two.hyperparameters), load_policy(model_dir, alone.hyperparameters)
    steps = []
    original_step = policy_two.step

    def recording_step():
        norm = original_step()
        steps.append({name: p.detach().clone() for name, p in policy_two.parameters.items()})
        return norm

    policy_two.step = recording_step
    metrics_two, metrics_alone = rl_step(policy_two, two), rl_step(policy_alone, alone)
    assert metrics_two["optimizerSteps"] == 2 and metrics_alone["optimizerSteps"] == 1
    assert metrics_two["gradNorms"][0] == pytest.approx(metrics_alone["gradNorms"][0], rel=1e-5)
    for name, parameter in policy_alone.parameters.items():
        torch.testing.assert_close(steps[0][name], parameter.detach(), rtol=1e-5, atol=1e-7)
    # The second minibatch moved the weights again, from where the first left them.
    assert any(not torch.equal(steps[0][name], steps[1][name]) for name in steps[0])


@pytest.mark.parametrize(
    "trainable,minibatches",
    [({"mode": "full"}, 1), ({"mode": "full"}, 2), ({"mode": "freeze", "trainPatterns": [r"layers\.1\.", r"model\.norm"]}, 1)],
)
def test_the_update_forward_as_proximal_pass_gives_the_step_of_the_separate_pass(tmp_path, capsys, trainable, minibatches):
    """π_prox is the weights before any update, which is what the first minibatch's forward runs on: its
    detached logprobs replace the separate no-grad pass for those samples (all of them at one minibatch).
    The step must equal the one with the pass for every sample: same gradient norms, loss, clipped and
    capped fractions, behaviour weights and new weights, at T ≠ 1, several micro-batches a minibatch, and
    with the frozen prefix (freeze) as with every parameter trainable."""
    model_dir = make_tiny_model_dir(tmp_path / "v0")
    samples = [rl_sample_at(model_dir, f"s{i}", f"g{i // 4}", float(i % 3), 0.7, seed=i) for i in range(8)]
    document = manifest(model_dir, tmp_path / "v1", samples=samples, minibatches=minibatches, microBatchSize=2, trainable=trainable)
    loaded = load_manifest(str(write_manifest(tmp_path / "m.json", document)))
    reused_policy, reference_policy = load_policy(model_dir, loaded.hyperparameters), load_policy(model_dir, loaded.hyperparameters)
    capsys.readouterr()
    reused = rl_step(reused_policy, loaded)
    phases = [line for line in capsys.readouterr().out.splitlines() if '"phase": "proximal"' in line]
    reference = rl_step(reference_policy, loaded, reuse_update_forward=False)
    assert reused["proximalFromUpdate"] == 8 // minibatches and reference["proximalFromUpdate"] == 0
    assert reused["frozenPrefixLayers"] == (1 if trainable["mode"] == "freeze" else 0)
    assert len(phases) == (0 if minibatches == 1 else 2)  # the second minibatch's 4 samples in micro-batches of 2
    assert reused["gradNorms"] == pytest.approx(reference["gradNorms"], rel=1e-5)
    for key in ("loss", "clipFraction", "importanceCappedFraction", "entropy"):
        assert reused[key] == pytest.approx(reference[key], rel=1e-5, abs=1e-7), key
    assert reused["maxAbsLogBehaviourWeight"] == pytest.approx(reference["maxAbsLogBehaviourWeight"], abs=1e-5)
    assert reused["maxAbsLogBehaviourWeight"] < TOLERANCE  # on-policy at T = 0.7
    moved = 0
    for name, parameter in reference_policy.parameters.items():
        torch.testing.assert_close(reused_policy.parameters[name].detach(), parameter.detach(), rtol=1e-5, atol=1e-7)
        moved += int(not torch.equal(parameter.detach(), load_policy(model_dir, loaded.hyperparameters).parameters[name].detach()))
    assert moved > 0  # the step did move weights, so equal weights mean equal updates
