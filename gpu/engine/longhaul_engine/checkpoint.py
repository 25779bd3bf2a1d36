"""Policy version directories: read a model strictly, write a new version atomically.

A version dir holds
  config.json, tokenizer files   copied from the base
  model.safetensors              the served weights (LoRA merged, EMA applied); tied lm_head omitted
  train_state.safetensors        what training needs besides the served weights: the raw trainable
                                 weights when EMA is on ("raw.*"), the LoRA adapter ("lora.*",
                                 "ema.*"); absent when the served weights are the raw ones
  optimizer.pt                   AdamW state keyed by parameter name order (torch.save)
  engine_state.json              policy version, run, step, trainable recipe, EMA, optimizer steps
  metrics.json                   the step's metrics
It is written under a hidden sibling temp dir and renamed into place, so a crash never leaves a
half-written version, and an existing non-empty output dir is never replaced.

Nothing to run: used by train.py and sft.py; tested in tests/test_checkpoint.py.
"""

import json
import os
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig, LlamaForCausalLM

from .errors import CorruptCheckpoint, OutputExists
from .manifest import ENGINE_STATE

MODEL_FILE, TRAIN_STATE_FILE, OPTIMIZER_FILE, METRICS_FILE = "model.safetensors", "train_state.safetensors", "optimizer.pt", "metrics.json"
COPIED_FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "longhaul-model.json",
)  # longhaul-model.json: written by prepare.py, read by the TS policy


def read_tensors(path: Path) -> dict:
    try:
        return load_file(str(path))
    except Exception as error:  # safetensors raises several types for truncated or garbled files
        raise CorruptCheckpoint(f"{path}: cannot load safetensors ({type(error).__name__}: {error})") from error


def load_model(model_dir: Path) -> LlamaForCausalLM:
    """Build the model from config.json and fill every weight from model.safetensors (float32).

    Strict: a missing weight (other than a tied lm_head) or an unknown one is a corrupt checkpoint,
    never silently random-initialised."""
    try:
        config = LlamaConfig.from_json_file(str(model_dir / "config.json"))
    except Exception as error:
        raise CorruptCheckpoint(f"{model_dir / 'config.json'}: cannot read model config ({error})") from error
    state = read_tensors(model_dir / MODEL_FILE)
    model = LlamaForCausalLM(config).float()
    missing, unexpected = model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    if config.tie_word_embeddings:
        missing = [k for k in missing if k != "lm_head.weight"]
        model.tie_weights()
    if missing or unexpected:
        raise CorruptCheckpoint(
            f"{model_dir / MODEL_FILE}: weights do not match config.json (missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    model.eval()  # no dropout: proximal and training forwards must see the same function
    return model


def load_optimizer_state(model_dir: Path) -> dict | None:
    path = model_dir / OPTIMIZER_FILE
    if not path.exists():
        return None
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:
        raise CorruptCheckpoint(f"{path}: cannot load optimizer state ({type(error).__name__}: {error})") from error


def load_train_state(model_dir: Path) -> dict:
    path = model_dir / TRAIN_STATE_FILE
    return read_tensors(path) if path.exists() else {}


def served_tensors(state: dict, tied: bool) -> dict:
    tensors = {k: v.detach().contiguous().clone() for k, v in state.items()}
    if tied:
        tensors.pop("lm_head.weight", None)
    return tensors


def temp_dir_for(output_dir: Path) -> Path:
    return output_dir.parent / f".{output_dir.name}.tmp-{os.getpid()}"


def write_version(output_dir: Path, base_dir: Path, files: dict, before_publish=None) -> None:
    """Write `files` ({name: tensors dict | json-able dict | optimizer state}) and publish atomically.

    `before_publish(temp_dir)` may add files (the ONNX export) before the rename."""
    temp = temp_dir_for(output_dir)
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir(parents=True)
    try:
        for name in COPIED_FILES:
            if (base_dir / name).is_file():
                shutil.copy2(base_dir / name, temp / name)
        for name, content in files.items():
            if name.endswith(".safetensors"):
                save_file(content, str(temp / name), metadata={"format": "pt"})
            elif name.endswith(".pt"):
                torch.save(content, temp / name)
            else:
                (temp / name).write_text(json.dumps(content, indent=2) + "\n")
        if before_publish is not None:
            before_publish(temp)
        _publish(temp, output_dir)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def _publish(temp: Path, output_dir: Path) -> None:
    if output_dir.exists() and (not output_dir.is_dir() or any(output_dir.iterdir())):
        raise OutputExists(f"outputDir {output_dir} already holds files; refusing to overwrite")
    if output_dir.exists():
        output_dir.rmdir()
    try:
        os.rename(temp, output_dir)
    except OSError as error:
        raise OutputExists(f"outputDir {output_dir}: cannot publish ({error}); refusing to overwrite") from error
    _fsync_dir(output_dir.parent)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def engine_state(policy_version: int, run_id: str, step: int, kind: str, trainable: dict, ema: bool, optimizer_steps: int) -> dict:
    return {
        "policyVersion": policy_version,
        "runId": run_id,
        "step": step,
        "kind": kind,
        "trainable": trainable,
        "ema": ema,
        "optimizerSteps": optimizer_steps,
    }
