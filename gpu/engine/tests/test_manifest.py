"""Bad batches are refused with a clear error before any model is loaded, and nothing is written."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from engine_fixtures import make_tiny_model_dir, manifest, rl_sample, write_manifest
from longhaul_engine.errors import CORRUPT, INVALID_INPUT, CorruptCheckpoint, InvalidBatch, OutputExists
from longhaul_engine.manifest import load_manifest, parse_manifest, schema_errors
from longhaul_engine.train import run

ENGINE_DIR = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return make_tiny_model_dir(tmp_path_factory.mktemp("models") / "v0")


def refusal(document: dict) -> str:
    with pytest.raises(InvalidBatch) as caught:
        parse_manifest(document)
    return str(caught.value)


def test_a_well_formed_manifest_passes_the_schema_and_the_invariants(base, tmp_path):
    loaded = load_manifest(write_manifest(tmp_path / "m.json", manifest(base, tmp_path / "v1")))
    assert (loaded.kind, len(loaded.samples), loaded.hyperparameters.ppo.minibatches) == ("rl", 4, 1)


def test_mismatched_token_array_lengths_are_refused(base, tmp_path):
    document = manifest(base, tmp_path / "v1")
    document["samples"][1]["behaviourLogprobs"].pop()
    assert refusal(document) == "samples[1] (id s1): behaviourLogprobs has 4 entries but tokenIds has 5"


def test_a_nan_reward_is_refused(base, tmp_path):
    document = manifest(base, tmp_path / "v1")
    document["samples"][2]["reward"] = math.nan
    assert refusal(document) == "samples[2] (id s2): reward is nan, must be a finite number"


def test_a_null_reward_which_is_how_javascript_writes_nan_is_refused(base, tmp_path):
    document = manifest(base, tmp_path / "v1")
    document["samples"][0]["reward"] = None
    assert refusal(document) == "invalid manifest: manifest.samples[0].reward: None is not of type 'number'"


def test_an_infinite_behaviour_logprob_is_refused(base, tmp_path):
    document = manifest(base, tmp_path / "v1")
    document["samples"][0]["behaviourLogprobs"][3] = -math.inf
    assert refusal(document) == "samples[0] (id s0): behaviourLogprobs[3] is -inf, must be a finite number"


def test_a_positive_behaviour_logprob_is_refused(base, tmp_path):
    document = manifest(base, tmp_path / "v1")
    document["samples"][0]["behaviourLogprobs"][3] = 0.5
    assert refusal(document) == "samples[0] (id s0): behaviourLogprobs[3] is 0.5, a logprob must be <= 0"


def test_a_group_of_one_is_refused_when_advantages_are_group_normalised(base, tmp_path):
    samples = [rl_sample("a", "g1", 1.0, [1, 5, 6], 1), rl_sample("b", "g2", 0.0, [1, 5, 7], 1), rl_sample("c", "g2", 1.0, [1, 5, 8], 1)]
    document = manifest(base, tmp_path / "v1", samples=samples)
    assert refusal(document) == "samples: group g1 has 1 sample, groupNormalise needs at least 2 per group (G >= 2)"
    assert len(parse_manifest(manifest(base, tmp_path / "v1", samples=samples, groupNormalise=False)).samples) == 3


def test_group_scale_is_read_with_std_as_the_default_and_an_unknown_one_is_refused(base, tmp_path):
    assert parse_manifest(manifest(base, tmp_path / "v1")).hyperparameters.ppo.group_scale == "std"
    document = manifest(base, tmp_path / "v1")
    document["hyperparameters"]["ppo"]["groupScale"] = "none"
    assert parse_manifest(document).hyperparameters.ppo.group_scale == "none"
    document["hyperparameters"]["ppo"]["groupScale"] = "max"
    assert refusal(document).startswith("invalid manifest: manifest.hyperparameters.ppo.groupScale: 'max' is not one of")


def test_a_negative_staleness_bound_is_refused_by_the_schema(base, tmp_path):
    document = manifest(base, tmp_path / "v1", maxStaleness=-1)
    assert refusal(document) == "invalid manifest: manifest.hyperparameters.ppo.maxStaleness: -1 is less than the minimum of 0"


def test_tokens_staler_than_eta_versions_are_refused(base, tmp_path):
    samples = [rl_sample("a", "g", 1.0, [1, 5, 6], 1, version=3), rl_sample("b", "g", 0.0, [1, 5, 7], 1, version=9)]
    document = manifest(base, tmp_path / "v11", base_version=10, samples=samples, maxStaleness=4)
    assert refusal(document) == "samples[0] (id a): policyVersions[1] is 3, staler than maxStaleness 4 allows at base version 10"


def test_tokens_from_a_version_newer_than_the_base_are_refused(base, tmp_path):
    samples = [rl_sample("a", "g", 1.0, [1, 5, 6], 1, version=2), rl_sample("b", "g", 0.0, [1, 5, 7], 1, version=1)]
    document = manifest(base, tmp_path / "v2", base_version=1, samples=samples)
    assert (
        refusal(document)
        == "samples[0] (id a): policyVersions[1] is 2, a trained token must come from a version in 0..1 (the base version)"
    )


def test_an_output_version_that_skips_a_version_is_refused(base, tmp_path):
    document = manifest(base, tmp_path / "v1")
    document["outputPolicyVersion"] = 3
    assert refusal(document) == "outputPolicyVersion is 3, must be basePolicy.version + 1 = 1"


def test_a_trained_first_token_is_refused(base, tmp_path):
    document = manifest(base, tmp_path / "v1")
    document["samples"][0]["lossMask"][0] = 1
    assert refusal(document) == "samples[0] (id s0): lossMask[0] must be 0 (the first token has no logprob)"


def test_schema_errors_name_every_bad_field(base, tmp_path):
    document = manifest(base, tmp_path / "v1", importanceCapMode="cut")
    document["hyperparameters"]["trainable"] = {"mode": "lora", "rank": 0, "alpha": 16, "targets": ["q_proj"]}
    document["surprise"] = True
    assert schema_errors(document) == [
        "manifest.hyperparameters.trainable.rank: 0 is less than the minimum of 1",
        "manifest.hyperparameters.ppo.importanceCapMode: 'cut' is not one of ['mask', 'clamp']",
        "manifest: Additional properties are not allowed ('surprise' was unexpected)",
    ]


def test_a_union_reports_the_variant_its_discriminator_chose_or_the_discriminator_itself(base, tmp_path):
    document = manifest(base, tmp_path / "v1")
    document["hyperparameters"]["trainable"] = {"mode": "lora", "alpha": 8, "targets": ["q_proj"]}
    assert schema_errors(document) == ["manifest.hyperparameters.trainable: 'rank' is a required property"]
    document["hyperparameters"]["trainable"] = {"mode": "partial"}
    assert schema_errors(document) == ['manifest.hyperparameters.trainable.mode: must be "freeze" or "full" or "lora", got "partial"']
    document = manifest(base, tmp_path / "v1")
    document["kind"] = "ppo"
    assert refusal(document) == 'invalid manifest: manifest.kind: must be "rl" or "sft", got "ppo"'
    document = manifest(base, tmp_path / "v1", gradientClip=-1)
    assert schema_errors(document) == ["manifest.hyperparameters.gradientClip: -1 is less than or equal to the minimum of 0"]


def test_a_bad_token_deep_in_a_long_sample_is_named(base, tmp_path):
    samples = [rl_sample(f"s{i}", "g", float(i % 2), list(range(1, 5001)), 100) for i in range(2)]
    document = manifest(base, tmp_path / "v1", samples=samples)
    assert schema_errors(document) == []
    document["samples"][1]["tokenIds"][4321] = -7
    document["samples"][0]["lossMask"][4000] = 2
    document["samples"][0]["turnIndices"][7] = True
    assert schema_errors(document) == [
        "manifest.samples[0].lossMask[4000]: 2 is not one of [0, 1]",
        "manifest.samples[0].turnIndices[7]: True is not of type 'integer'",
        "manifest.samples[1].tokenIds[4321]: -7 is less than the minimum of 0",
    ]


def test_an_unknown_base_version_dir_is_refused(tmp_path):
    path = write_manifest(tmp_path / "m.json", manifest(tmp_path / "nowhere", tmp_path / "v1"))
    with pytest.raises(InvalidBatch) as caught:
        load_manifest(path)
    assert (
        str(caught.value)
        == f"basePolicy.modelDir {tmp_path / 'nowhere'}: unknown policy version 0, no config.json + model.safetensors there"
    )


def test_a_base_dir_holding_another_version_is_refused(base, tmp_path):
    path = write_manifest(
        tmp_path / "m.json",
        manifest(
            base,
            tmp_path / "v4",
            base_version=3,
            samples=[rl_sample("a", "g", 1.0, [1, 5, 6], 1, version=3), rl_sample("b", "g", 0.0, [1, 5, 7], 1, version=3)],
        ),
    )
    with pytest.raises(InvalidBatch) as caught:
        load_manifest(path)
    assert str(caught.value) == f"basePolicy.modelDir {base} holds policy version 0, manifest says 3"


def test_a_corrupt_checkpoint_is_refused_and_nothing_is_written(base, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text((base / "config.json").read_text())
    (broken / "model.safetensors").write_bytes((base / "model.safetensors").read_bytes()[:1000])
    path = write_manifest(tmp_path / "m.json", manifest(broken, tmp_path / "v1"))
    with pytest.raises(CorruptCheckpoint) as caught:
        run(str(path), onnx=False)
    assert str(caught.value).startswith(f"{broken / 'model.safetensors'}: cannot load safetensors (")
    assert caught.value.error_type == CORRUPT
    assert not (tmp_path / "v1").exists()


def test_an_output_dir_holding_a_trained_version_is_never_overwritten(base, tmp_path):
    first = write_manifest(tmp_path / "m.json", manifest(base, tmp_path / "v1"))
    run(str(first), onnx=False)
    before = (tmp_path / "v1" / "model.safetensors").read_bytes()
    with pytest.raises(OutputExists) as caught:
        run(str(first), onnx=False)
    assert str(caught.value) == f"outputDir {tmp_path / 'v1'} already holds trained version 1 (run run-test, step 0); refusing to overwrite"
    assert (tmp_path / "v1" / "model.safetensors").read_bytes() == before


def test_the_command_line_prints_the_refusal_as_one_json_line_and_exits_2(base, tmp_path):
    document = manifest(base, tmp_path / "v1")
    document["samples"][0]["reward"] = math.inf
    path = write_manifest(tmp_path / "m.json", document)
    done = subprocess.run(
        [sys.executable, "-m", "longhaul_engine.train", "--manifest", str(path), "--onnx", "skip"],
        cwd=ENGINE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "event": "error",
        "type": INVALID_INPUT,
        "message": "samples[0] (id s0): reward is inf, must be a finite number",
    }
    assert not (tmp_path / "v1").exists()
