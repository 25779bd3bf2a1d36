"""Supervised warm start through the same engine: the loss on trained tokens falls, tool-inserted
tokens (loss mask 0) are not learned, and RL continues from the SFT version's optimizer."""

import copy

import torch

from engine_fixtures import HYPERPARAMETERS, make_tiny_model_dir, manifest, write_manifest
from longhaul_engine.checkpoint import load_model
from longhaul_engine.sft import sft_step
from longhaul_engine.train import run

# a "trajectory": prompt 1 50, answer 60 61, tool output 70 71 (mask 0), answer 62 63
TOKENS = [1, 50, 60, 61, 70, 71, 62, 63]
MASK = [0, 0, 1, 1, 0, 0, 1, 1]


def sft_manifest(base, out, **extra):
    hp = {k: v for k, v in copy.deepcopy(HYPERPARAMETERS).items() if k != "ppo"}
    hp.update({"learningRate": 1e-2, "epochs": 12, "batchSize": 2, **extra})
    samples = [{"id": f"t{i}", "tokenIds": TOKENS, "lossMask": MASK} for i in range(4)]
    return {
        "schemaVersion": 1,
        "kind": "sft",
        "runId": "warm",
        "step": 0,
        "basePolicy": {"version": 0, "modelDir": str(base)},
        "outputDir": str(out),
        "outputPolicyVersion": 1,
        "hyperparameters": hp,
        "samples": samples,
    }


def probability(model, position: int) -> float:
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([TOKENS[:position]])).logits[0, -1]
    return float(torch.softmax(logits, -1)[TOKENS[position]])


def test_sft_learns_the_trained_tokens_and_not_the_tool_output(tmp_path):
    v0 = make_tiny_model_dir(tmp_path / "v0")
    metrics = run(
        str(write_manifest(tmp_path / "m.json", sft_manifest(v0, tmp_path / "v1"))), onnx=False, step_fn=sft_step, expected_kind="sft"
    )
    assert metrics["optimizerSteps"] == 24  # 12 epochs × 2 steps of 2 samples
    assert metrics["losses"][0] > 5.0 and metrics["losses"][-1] < 0.5
    before, after = load_model(v0), load_model(tmp_path / "v1")
    assert probability(after, 6) > 0.9 > 0.01 > probability(before, 6)  # trained answer token
    assert probability(after, 4) < 0.2  # tool token: not a target


def test_rl_after_sft_resumes_the_warm_start_optimizer(tmp_path):
    v0 = make_tiny_model_dir(tmp_path / "v0")
    run(
        str(write_manifest(tmp_path / "m0.json", sft_manifest(v0, tmp_path / "v1", epochs=1))),
        onnx=False,
        step_fn=sft_step,
        expected_kind="sft",
    )
    rl = manifest(tmp_path / "v1", tmp_path / "v2", base_version=1)
    assert run(str(write_manifest(tmp_path / "m1.json", rl)), onnx=False)["optimizerResumed"] is True


def test_an_sft_manifest_is_refused_by_the_rl_command(tmp_path):
    import pytest
    from longhaul_engine.errors import InvalidBatch

    v0 = make_tiny_model_dir(tmp_path / "v0")
    with pytest.raises(InvalidBatch, match="^kind is sft, this command trains kind rl$"):
        run(str(write_manifest(tmp_path / "m.json", sft_manifest(v0, tmp_path / "v1"))), onnx=False)
