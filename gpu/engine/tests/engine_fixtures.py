"""Test fixtures: a tiny random Llama (hidden 64, 2 layers, vocab 256, tied embeddings like
SmolLM2) saved as a prepared model dir, and manifests around it. No downloads."""

import copy
import json
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from longhaul_engine.manifest import rl_hyperparameters

VOCAB = 256


def make_tiny_model_dir(path: Path, seed: int = 0) -> Path:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
    )
    LlamaForCausalLM(config).save_pretrained(path, safe_serialization=True)
    return path


HYPERPARAMETERS = rl_hyperparameters(learningRate=1e-3)


def rl_sample(sample_id: str, group: str, reward: float, tokens: list, prompt: int, version: int = 0) -> dict:
    n = len(tokens)
    return {
        "id": sample_id,
        "groupId": group,
        "reward": reward,
        "tokenIds": tokens,
        "lossMask": [0] * prompt + [1] * (n - prompt),
        "behaviourLogprobs": [0.0] * prompt + [-1.0] * (n - prompt),
        "policyVersions": [-1] * prompt + [version] * (n - prompt),
        "turnIndices": [0] * n,
    }


def default_samples() -> list:
    return [rl_sample(f"s{i}", f"g{i // 2}", float(i % 2), [1, 10 + i, 20, 30, 40 + i], 2) for i in range(4)]


def manifest(base_dir: Path, out_dir: Path, base_version: int = 0, samples=None, step: int = 0, **hyper) -> dict:
    hp = copy.deepcopy(HYPERPARAMETERS)
    for key, value in hyper.items():
        if key in hp["ppo"]:
            hp["ppo"][key] = value
        else:
            hp[key] = value
    return {
        "schemaVersion": 1,
        "kind": "rl",
        "runId": "run-test",
        "step": step,
        "basePolicy": {"version": base_version, "modelDir": str(base_dir)},
        "outputDir": str(out_dir),
        "outputPolicyVersion": base_version + 1,
        "hyperparameters": hp,
        "samples": default_samples() if samples is None else samples,
    }


def write_manifest(path: Path, document: dict) -> Path:
    path.write_text(json.dumps(document))
    return path
