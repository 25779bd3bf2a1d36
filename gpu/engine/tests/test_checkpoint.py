"""Versions on disk: a step resumed from the previous version's dir continues exactly as if
training had never stopped (weights, AdamW moments, adapter, EMA), and writes are atomic."""

import pytest
import torch
from safetensors.torch import load_file

from engine_fixtures import make_tiny_model_dir, manifest, rl_sample, write_manifest
from longhaul_engine.manifest import parse_manifest
from longhaul_engine.policy import load_policy
from longhaul_engine.train import rl_step, run

RECIPES = {
    "full": dict(trainable={"mode": "full"}, emaDecay=None),
    "lora+ema": dict(trainable={"mode": "lora", "rank": 4, "alpha": 8, "targets": ["q_proj", "v_proj", "down_proj"]}, emaDecay=0.9),
    "freeze+ema": dict(trainable={"mode": "freeze", "trainPatterns": ["lm_head", r"layers\.1\.mlp"]}, emaDecay=0.5),
}


def batch(seed: int, version: int) -> list:
    g = torch.Generator().manual_seed(seed)
    samples = []
    for i in range(6):
        tokens = [1] + torch.randint(3, 256, (7,), generator=g).tolist()
        sample = rl_sample(f"s{seed}-{i}", f"g{i // 3}", float(torch.rand(1, generator=g)), tokens, 3, version)
        sample["behaviourLogprobs"] = [0.0] * 3 + (-torch.rand(5, generator=g) * 6).tolist()
        samples.append(sample)
    return samples


def assert_optimizer_states_equal(saved: dict, live: dict, exact: bool) -> None:
    assert saved["param_groups"] == live["param_groups"]
    assert saved["state"].keys() == live["state"].keys()
    for index, state in live["state"].items():
        for key, value in state.items():
            if exact:
                assert torch.equal(saved["state"][index][key], value), (index, key)
            else:
                torch.testing.assert_close(saved["state"][index][key], value, rtol=1e-3, atol=1e-9)


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_two_steps_through_disk_equal_two_steps_in_memory(tmp_path, recipe):
    v0 = make_tiny_model_dir(tmp_path / "v0")
    documents = [
        manifest(v0, tmp_path / "v1", samples=batch(1, 0), minibatches=2, **RECIPES[recipe]),
        manifest(tmp_path / "v1", tmp_path / "v2", base_version=1, step=1, samples=batch(2, 1), minibatches=2, **RECIPES[recipe]),
    ]
    metrics = [run(str(write_manifest(tmp_path / f"m{i}.json", d)), onnx=False) for i, d in enumerate(documents)]
    assert [m["optimizerResumed"] for m in metrics] == [False, True]

    manifests = [parse_manifest(d) for d in documents]
    live = load_policy(v0, manifests[0].hyperparameters)
    for m in manifests:
        rl_step(live, m)
    on_disk = load_file(str(tmp_path / "v2" / "model.safetensors"))
    served = live.served_state()
    assert on_disk.keys() == {k for k in served if k != "lm_head.weight"}
    for key, value in on_disk.items():
        if recipe.startswith("lora"):  # the base is recovered by un-merging: equal up to float rounding
            torch.testing.assert_close(value, served[key], rtol=0, atol=2e-6)
        else:
            assert torch.equal(value, served[key]), key
    saved = torch.load(tmp_path / "v2" / "optimizer.pt", weights_only=True)
    assert saved["names"] == list(live.parameters)
    assert_optimizer_states_equal(saved["state"], live.optimizer.state_dict(), exact=not recipe.startswith("lora"))
    assert live.optimizer.state_dict()["state"][0]["step"].item() == 4  # 2 minibatches × 2 steps


def test_a_changed_trainable_recipe_starts_a_fresh_optimizer(tmp_path):
    v0 = make_tiny_model_dir(tmp_path / "v0")
    run(str(write_manifest(tmp_path / "m0.json", manifest(v0, tmp_path / "v1"))), onnx=False)
    changed = manifest(tmp_path / "v1", tmp_path / "v2", base_version=1, **RECIPES["lora+ema"])
    assert run(str(write_manifest(tmp_path / "m1.json", changed)), onnx=False)["optimizerResumed"] is False


def test_a_failure_while_writing_leaves_neither_the_version_nor_a_temp_dir(tmp_path, monkeypatch):
    v0 = make_tiny_model_dir(tmp_path / "v0")
    import longhaul_engine.train as train

    def broken_export(_):
        raise RuntimeError("disk full")

    monkeypatch.setattr(train, "export_for_serving", broken_export)
    with pytest.raises(RuntimeError, match="disk full"):
        run(str(write_manifest(tmp_path / "m.json", manifest(v0, tmp_path / "v1"))), onnx=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "v0"]


def test_a_version_dir_carries_the_files_the_next_step_and_the_server_need(tmp_path):
    v0 = make_tiny_model_dir(tmp_path / "v0")
    metrics = run(str(write_manifest(tmp_path / "m.json", manifest(v0, tmp_path / "v1", **RECIPES["lora+ema"]))), onnx=False)
    names = sorted(p.name for p in (tmp_path / "v1").iterdir())
    assert names == [
        "config.json",
        "engine_state.json",
        "generation_config.json",
        "metrics.json",
        "model.safetensors",
        "optimizer.pt",
        "train_state.safetensors",
    ]
    adapter = load_file(str(tmp_path / "v1" / "train_state.safetensors"))
    assert len([k for k in adapter if k.startswith("lora.")]) == len([k for k in adapter if k.startswith("ema.")]) == 12
    assert metrics["trainableParameters"] == sum(v.numel() for k, v in adapter.items() if k.startswith("lora."))
