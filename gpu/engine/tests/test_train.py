"""End to end through the real command path: on-policy RL on a trivially learnable reward raises
it. Each step samples from the current version, writes a manifest, and trains the next version."""

import json
import subprocess
import sys
from pathlib import Path

import torch

from engine_fixtures import make_tiny_model_dir, manifest, write_manifest
from longhaul_engine.checkpoint import load_model
from longhaul_engine.train import run

TARGET = 32  # reward 1 when the sampled token id is below 32 (1/8 of the vocabulary)
PROMPTS = [10, 11, 12, 13]
G = 8


def sample_group(model_dir: Path, version: int, generator: torch.Generator) -> tuple:
    """G completions of one token per prompt; returns samples and the policy's target mass."""
    model = load_model(model_dir)
    samples, mass = [], []
    with torch.no_grad():
        for prompt in PROMPTS:
            logp = torch.log_softmax(model(input_ids=torch.tensor([[1, prompt]])).logits[0, -1], -1)
            mass.append(float(logp[:TARGET].exp().sum()))
            for g, token in enumerate(torch.multinomial(logp.exp(), G, replacement=True, generator=generator).tolist()):
                samples.append(
                    {
                        "id": f"v{version}-p{prompt}-{g}",
                        "groupId": f"p{prompt}",
                        "reward": float(token < TARGET),
                        "tokenIds": [1, prompt, token],
                        "lossMask": [0, 0, 1],
                        "behaviourLogprobs": [0.0, 0.0, float(logp[token])],
                        "policyVersions": [-1, -1, version],
                        "turnIndices": [0, 0, 0],
                    }
                )
    return samples, sum(mass) / len(mass)


def test_on_policy_rl_raises_a_trivially_learnable_reward(tmp_path):
    model_dir = make_tiny_model_dir(tmp_path / "v0")
    generator = torch.Generator().manual_seed(0)
    masses, rewards = [], []
    for version in range(8):
        samples, mass = sample_group(model_dir, version, generator)
        masses.append(mass)
        rewards.append(sum(s["reward"] for s in samples) / len(samples))
        out = tmp_path / f"v{version + 1}"
        document = manifest(
            model_dir, out, base_version=version, samples=samples, step=version, learningRate=1e-2, microBatchSize=8, gradientClip=1.0
        )
        metrics = run(str(write_manifest(tmp_path / f"m{version}.json", document)), onnx=False)
        assert metrics["importanceCappedFraction"] == 0.0 and metrics["clipFraction"] == 0.0  # on-policy
        model_dir = out
    _, final = sample_group(model_dir, 8, generator)
    masses.append(final)
    print(json.dumps({"targetMass": [round(m, 3) for m in masses], "meanReward": rewards}))
    assert masses[0] < 0.2
    assert final > 2.5 * masses[0]  # measured: 0.130 → 0.443 over 8 versions
    assert sum(rewards[-3:]) / 3 > sum(rewards[:3]) / 3


def test_an_entropy_bonus_and_sequence_aggregation_run_through_the_command_line(tmp_path):
    model_dir = make_tiny_model_dir(tmp_path / "v0")
    document = manifest(
        model_dir,
        tmp_path / "v1",
        aggregation="sequence",
        entropyCoefficient=0.01,
        importanceCapMode="clamp",
        turnDiscount=0.9,
        minibatches=2,
    )
    path = write_manifest(tmp_path / "m.json", document)
    done = subprocess.run(
        [sys.executable, "-m", "longhaul_engine.train", "--manifest", str(path), "--onnx", "skip", "--threads", "2"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.strip().splitlines()]
    # π_prox of the first minibatch's samples comes from its own forward: the separate pass runs for the second's.
    assert [line["event"] for line in lines] == ["start", "progress", "progress", "progress", "done"]
    assert [line.get("phase") for line in lines[1:4]] == ["proximal", "update", "update"]
    metrics = lines[-1]["metrics"]
    assert metrics["optimizerSteps"] == 2 and len(metrics["gradNorms"]) == 2
    assert metrics["entropy"] > 5.0  # a random 256-word model is close to uniform: ln 256 = 5.55
    assert json.loads((tmp_path / "v1" / "metrics.json").read_text())["policyVersion"] == 1
    assert json.loads((tmp_path / "v1" / "engine_state.json").read_text())["policyVersion"] == 1


def test_a_new_version_carries_the_onnx_export_of_its_served_weights(tmp_path):
    model_dir = make_tiny_model_dir(tmp_path / "v0")
    metrics = run(str(write_manifest(tmp_path / "m.json", manifest(model_dir, tmp_path / "v1"))), onnx=True)
    assert metrics["onnx"] == "model.onnx"
    assert (tmp_path / "v1" / "model.onnx").stat().st_size > 0


def test_a_new_version_says_the_format_of_its_export_not_its_bases(tmp_path):
    from longhaul_engine.prepare import FORMAT_VERSION, MANIFEST

    model_dir = make_tiny_model_dir(tmp_path / "v0")
    (model_dir / MANIFEST).write_text(json.dumps({"format": 3, "name": "tiny"}))
    run(str(write_manifest(tmp_path / "m.json", manifest(model_dir, tmp_path / "v1"))), onnx=True)
    assert json.loads((tmp_path / "v1" / MANIFEST).read_text()) == {"format": FORMAT_VERSION, "name": "tiny"}
    assert json.loads((model_dir / MANIFEST).read_text())["format"] == 3, "the base is left as it was"
