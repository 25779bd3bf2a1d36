"""The batch manifest: parse, validate against manifest.schema.json (generated from the zod schema in
gpu/train/manifest.ts, checked with `jsonschema`), then check the invariants a schema cannot express.
Every refusal happens here, before any model is loaded or any compute runs.

Check a manifest without training:
  cd gpu/engine && ../../.longhaul/tools/venv/bin/python -m longhaul_engine.manifest --manifest PATH
"""

import argparse
import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from jsonschema import Draft202012Validator, ValidationError, validators

from .errors import EngineError, InvalidBatch, OutputExists

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "manifest.schema.json"
ENGINE_STATE = "engine_state.json"
LOGPROB_TOLERANCE = 1e-4  # a behaviour logprob above 0 (+ rounding) cannot come from a softmax


def rl_hyperparameters(**overrides) -> dict:
    """A complete RL hyperparameter block for manifests the engine writes itself (its benchmark, its
    tests): AdamW without weight decay, gradient clip 1, full fine-tuning, no EMA, seed 0, and
    AReaL-style decoupled PPO; keyword arguments replace top-level fields. Manifests from the
    TypeScript side carry their own values (defaults in gpu/train/train-step.schema.ts)."""
    hp = {
        "learningRate": 1e-5,
        "weightDecay": 0.0,
        "gradientClip": 1.0,
        "microBatchSize": 2,
        "trainable": {"mode": "full"},
        "emaDecay": None,
        "seed": 0,
        "ppo": {
            "clipEpsilon": 0.2,
            "importanceCap": 5.0,
            "importanceCapMode": "mask",
            "aggregation": "token",
            "groupNormalise": True,
            "turnDiscount": 1.0,
            "entropyCoefficient": 0.0,
            "maxStaleness": 4,
            "minibatches": 1,
        },
    }
    hp.update(overrides)
    return hp


@dataclass(frozen=True)
class Ppo:
    clip_epsilon: float
    importance_cap: float | None
    importance_cap_mode: str
    aggregation: str
    group_normalise: bool
    group_scale: str
    turn_discount: float
    entropy_coefficient: float
    minibatches: int
    max_staleness: int


@dataclass(frozen=True)
class Hyperparameters:
    learning_rate: float
    weight_decay: float
    adam_betas: tuple
    gradient_clip: float | None
    micro_batch_size: int
    trainable: dict
    ema_decay: float | None
    seed: int
    ppo: Ppo | None
    epochs: int = 1  # sft only
    batch_size: int | None = None  # sft only: samples per optimizer step (None = all)


@dataclass(frozen=True)
class Sample:
    id: str
    token_ids: list
    loss_mask: list
    group_id: str = ""
    reward: float = 0.0
    behaviour_logprobs: list | None = None
    policy_versions: list | None = None
    turn_indices: list | None = None
    temperature: float = 1.0  # the behaviour logprobs are log-softmax(logits / temperature)


@dataclass(frozen=True)
class Manifest:
    kind: str
    run_id: str
    step: int
    base_version: int
    base_dir: Path
    output_dir: Path
    output_version: int
    hyperparameters: Hyperparameters
    samples: list


_PLAIN_TYPES = {"integer": {int}, "number": {int, float}}


@cache
def _plain_items_check(items_json: str):
    """One pass over an array of plain numbers (token ids, masks, logprobs, versions), or None when
    the item schema is not that simple. True means every item is valid; False means "check slowly"
    (to find and name the bad item), never "invalid"."""
    items = json.loads(items_json)
    if items.get("type") not in _PLAIN_TYPES or set(items) - {"type", "minimum", "maximum", "enum", "description"}:
        return None
    types, low, high = _PLAIN_TYPES[items["type"]], items.get("minimum"), items.get("maximum")
    allowed = set(items.get("enum", ()))

    def check(values: list) -> bool:
        if not values:
            return True
        if not set(map(type, values)) <= types:  # bool is not int here, as in JSON Schema
            return False
        if allowed and not set(values) <= allowed:
            return False
        return (low is None or min(values) >= low) and (high is None or max(values) <= high)

    return check


def _items_with_fast_path(validator, items, instance, schema):
    """jsonschema's own `items`, after a one-pass check that skips it for valid token arrays: a
    batch holds hundreds of thousands of tokens, and per-item validation takes about a minute."""
    if isinstance(instance, list) and isinstance(items, dict) and "type" in items and len(instance) > 1:
        check = _plain_items_check(json.dumps(items, sort_keys=True))
        if check is not None and check(instance):
            return
    yield from Draft202012Validator.VALIDATORS["items"](validator, items, instance, schema)


_ManifestValidator = validators.extend(Draft202012Validator, {"items": _items_with_fast_path})


@cache
def _validator():
    schema = json.loads(SCHEMA_PATH.read_text())
    Draft202012Validator.check_schema(schema)
    return _ManifestValidator(schema)


def _field(path) -> str:
    """The JSON path of a value the way the TypeScript side names fields: manifest.samples[0].reward."""
    return "manifest" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def _short(value) -> str:
    """A value as a message quotes it: itself when short, otherwise its kind and size."""
    text = repr(value)
    if len(text) <= 60:
        return text
    return (
        f"a {type(value).__name__} of {len(value)} {'characters' if isinstance(value, str) else 'items'}"
        if hasattr(value, "__len__")
        else text[:60] + "…"
    )


def _branches(error: ValidationError) -> list:
    """A oneOf/anyOf failure's sub-errors, one list per variant."""
    branches = defaultdict(list)
    for sub in error.context:
        branches[sub.relative_schema_path[0]].append(sub)
    return list(branches.values())


def _meant_branch(branches: list) -> list | None:
    """The errors of the one variant the document meant, or None. A variant is not meant when its
    discriminator (a const field such as kind or mode) differs, nor, for a nullable value, when the
    value does not even have the variant's type."""
    meant = [errors for errors in branches if not any(e.validator == "const" and len(e.relative_path) == 1 for e in errors)]
    if len(meant) > 1:
        meant = [errors for errors in meant if not any(e.validator == "type" and not e.relative_path for e in errors)]
    return meant[0] if len(meant) == 1 else None


def _no_variant(error: ValidationError, branches: list) -> list:
    """Why a value matches no variant: the const fields every variant refuses, or the types it lacks."""
    refused = [{e.relative_path[0]: e for e in errors if e.validator == "const" and len(e.relative_path) == 1} for errors in branches]
    culprits = sorted(set.intersection(*(set(fields) for fields in refused)), key=str) if refused else []
    if culprits:
        lines = []
        for key in culprits:
            allowed = sorted({json.dumps(fields[key].validator_value) for fields in refused})
            lines.append(
                f"{_field(error.absolute_path)}.{key}: must be {' or '.join(allowed)}, got {json.dumps(error.instance.get(key), default=str)[:60]}"
            )
        return lines
    types = sorted({str(e.validator_value) for errors in branches for e in errors if e.validator == "type" and not e.relative_path})
    if types:
        return [f"{_field(error.absolute_path)}: {_short(error.instance)} is not of type {' or '.join(types)}"]
    return [f"{_field(error.absolute_path)}: {_short(error.instance)} matches none of the allowed variants"]


def _explain(error: ValidationError) -> list:
    """Leaf errors, each "<field>: <problem>", descending into the variant a union was meant to match."""
    if error.validator in ("oneOf", "anyOf") and error.context:
        branches = _branches(error)
        meant = _meant_branch(branches)
        if meant is None:
            return _no_variant(error, branches)
        return [line for sub in meant for line in _explain(sub)]
    return [f"{_field(error.absolute_path)}: {error.message.replace(repr(error.instance), _short(error.instance))}"]


def schema_errors(document) -> list:
    """Every way the document breaks manifest.schema.json, each naming the field; [] when it conforms."""
    return [line for error in _validator().iter_errors(document) for line in _explain(error)]


def _parse_hyperparameters(raw: dict) -> Hyperparameters:
    ppo = raw.get("ppo")
    return Hyperparameters(
        learning_rate=raw["learningRate"],
        weight_decay=raw["weightDecay"],
        adam_betas=tuple(raw.get("adamBetas", (0.9, 0.999))),
        gradient_clip=raw["gradientClip"],
        micro_batch_size=int(raw["microBatchSize"]),
        trainable=raw["trainable"],
        ema_decay=raw["emaDecay"],
        seed=int(raw["seed"]),
        epochs=int(raw.get("epochs", 1)),
        batch_size=raw.get("batchSize"),
        ppo=None
        if ppo is None
        else Ppo(
            clip_epsilon=ppo["clipEpsilon"],
            importance_cap=ppo["importanceCap"],
            importance_cap_mode=ppo["importanceCapMode"],
            aggregation=ppo["aggregation"],
            group_normalise=ppo["groupNormalise"],
            group_scale=ppo.get("groupScale", "std"),
            turn_discount=ppo["turnDiscount"],
            entropy_coefficient=ppo["entropyCoefficient"],
            minibatches=int(ppo.get("minibatches", 1)),
            max_staleness=int(ppo["maxStaleness"]),
        ),
    )


def _parse_sample(raw: dict) -> Sample:
    return Sample(
        id=raw["id"],
        token_ids=[int(t) for t in raw["tokenIds"]],
        loss_mask=[int(m) for m in raw["lossMask"]],
        group_id=raw.get("groupId", ""),
        reward=raw.get("reward", 0.0),
        behaviour_logprobs=raw.get("behaviourLogprobs"),
        policy_versions=None if "policyVersions" not in raw else [int(v) for v in raw["policyVersions"]],
        turn_indices=None if "turnIndices" not in raw else [int(t) for t in raw["turnIndices"]],
        temperature=float(raw.get("temperature", 1.0)),
    )


def _check_sample(sample: Sample, index: int, base_version: int, ppo: Ppo | None) -> None:
    where = f"samples[{index}] (id {sample.id})"
    length = len(sample.token_ids)
    arrays = {"lossMask": sample.loss_mask}
    if ppo is not None:
        arrays.update(behaviourLogprobs=sample.behaviour_logprobs, policyVersions=sample.policy_versions, turnIndices=sample.turn_indices)
    for name, values in arrays.items():
        if len(values) != length:
            raise InvalidBatch(f"{where}: {name} has {len(values)} entries but tokenIds has {length}")
    if sample.loss_mask[0] != 0:
        raise InvalidBatch(f"{where}: lossMask[0] must be 0 (the first token has no logprob)")
    if ppo is None:
        return
    if not math.isfinite(sample.reward):
        raise InvalidBatch(f"{where}: reward is {sample.reward}, must be a finite number")
    for t, (mask, logprob, version) in enumerate(zip(sample.loss_mask, sample.behaviour_logprobs, sample.policy_versions)):
        if not math.isfinite(logprob):
            raise InvalidBatch(f"{where}: behaviourLogprobs[{t}] is {logprob}, must be a finite number")
        if not mask:
            continue
        if logprob > LOGPROB_TOLERANCE:
            raise InvalidBatch(f"{where}: behaviourLogprobs[{t}] is {logprob}, a logprob must be <= 0")
        if version < 0 or version > base_version:
            raise InvalidBatch(
                f"{where}: policyVersions[{t}] is {version}, a trained token must come from a version in 0..{base_version} (the base version)"
            )
        if base_version - version > ppo.max_staleness:
            raise InvalidBatch(
                f"{where}: policyVersions[{t}] is {version}, staler than maxStaleness {ppo.max_staleness} allows at base version {base_version}"
            )


def _check_batch(manifest: Manifest) -> None:
    samples, ppo = manifest.samples, manifest.hyperparameters.ppo
    duplicates = [sid for sid, n in Counter(s.id for s in samples).items() if n > 1]
    if duplicates:
        raise InvalidBatch(f"samples: id {duplicates[0]} appears more than once")
    if manifest.output_version != manifest.base_version + 1:
        raise InvalidBatch(
            f"outputPolicyVersion is {manifest.output_version}, must be basePolicy.version + 1 = {manifest.base_version + 1}"
        )
    for index, sample in enumerate(samples):
        _check_sample(sample, index, manifest.base_version, ppo)
    if not any(any(s.loss_mask) for s in samples):
        raise InvalidBatch("samples: no sample has a token with lossMask 1, nothing to train on")
    if ppo is not None and ppo.group_normalise:
        sizes = Counter(s.group_id for s in samples)
        small = sorted(g for g, n in sizes.items() if n < 2)
        if small:
            raise InvalidBatch(
                f"samples: group {small[0]} has {sizes[small[0]]} sample, groupNormalise needs at least 2 per group (G >= 2)"
            )
    if ppo is not None and len(samples) < ppo.minibatches:
        raise InvalidBatch(f"hyperparameters.ppo.minibatches is {ppo.minibatches} but the batch has only {len(samples)} samples")


def read_engine_state(model_dir: Path) -> dict | None:
    path = model_dir / ENGINE_STATE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        from .errors import CorruptCheckpoint

        raise CorruptCheckpoint(f"{path}: unreadable engine state ({error})") from error


def check_directories(manifest: Manifest) -> None:
    """The base dir holds the announced version; the output dir holds no trained version."""
    base = manifest.base_dir
    if not (base / "config.json").is_file() or not (base / "model.safetensors").is_file():
        raise InvalidBatch(
            f"basePolicy.modelDir {base}: unknown policy version {manifest.base_version}, no config.json + model.safetensors there"
        )
    state = read_engine_state(base)
    held = 0 if state is None else state.get("policyVersion")
    if held != manifest.base_version:
        raise InvalidBatch(f"basePolicy.modelDir {base} holds policy version {held}, manifest says {manifest.base_version}")
    out = manifest.output_dir
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        trained = read_engine_state(out) if out.is_dir() else None
        what = (
            f"trained version {trained.get('policyVersion')} (run {trained.get('runId')}, step {trained.get('step')})"
            if trained
            else "files"
        )
        raise OutputExists(f"outputDir {out} already holds {what}; refusing to overwrite")


def parse_manifest(document: dict, relative_to: Path = Path(".")) -> Manifest:
    """Validate a manifest document (schema + invariants) and return it typed. Raises InvalidBatch."""
    problems = schema_errors(document)
    if problems:
        raise InvalidBatch("invalid manifest: " + "; ".join(problems[:10]))
    manifest = Manifest(
        kind=document["kind"],
        run_id=document["runId"],
        step=int(document["step"]),
        base_version=int(document["basePolicy"]["version"]),
        base_dir=(relative_to / document["basePolicy"]["modelDir"]).resolve(),
        output_dir=(relative_to / document["outputDir"]).resolve(),
        output_version=int(document["outputPolicyVersion"]),
        hyperparameters=_parse_hyperparameters(document["hyperparameters"]),
        samples=[_parse_sample(s) for s in document["samples"]],
    )
    _check_batch(manifest)
    return manifest


def load_manifest(path: str | Path) -> Manifest:
    """Read, validate and check a manifest file and its directories. Raises an EngineError subclass."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise InvalidBatch(f"manifest {path}: cannot read JSON ({error})") from error
    if not isinstance(document, dict):
        raise InvalidBatch(f"manifest {path}: must be a JSON object")
    manifest = parse_manifest(document, path.parent)
    check_directories(manifest)
    return manifest


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--manifest", required=True)
    args = parser.parse_args()
    try:
        m = load_manifest(args.manifest)
        print(json.dumps({"event": "valid", "kind": m.kind, "samples": len(m.samples), "baseVersion": m.base_version}))
    except EngineError as error:
        print(json.dumps(error.to_json()))
        raise SystemExit(2)
