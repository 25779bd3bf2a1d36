"""An int8 copy of a prepared folder's ONNX graph (onnxruntime dynamic quantisation), and how far its
log-probabilities drift from the trainer's (PyTorch, float32, model.safetensors).

The copy is a complete prepared folder (safetensors, tokenizer and manifest hard-linked or copied; model.onnx
replaced by the int8 graph), so `longhaul bench infer --baseline-model-dir` and the onnx policy can load it.
Weights of MatMul nodes become int8 per output column; activations are quantised per step (dynamic), so
no calibration data is needed. The trainer still trains float32 weights: an int8 policy samples from a
slightly different distribution than the one the trainer scores, which is what the drift figures measure.

Run (from gpu/engine):
    ../../.longhaul/tools/venv/bin/python -m longhaul_engine.quantize --model DIR --out DIR
The last stdout line is JSON: the drift of the float32 and of the int8 graph against PyTorch.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from .checkpoint import load_model

MANIFEST = "longhaul-model.json"
TEXT = (
    "The Temporal server keeps workflow histories durable while activities do all input and output. "
    "A policy samples a turn, a tool answers, and the trainer scores every token the policy chose. "
    "Paris is the capital of France, and the Seine runs through it on its way to the English Channel."
)


def quantize(model_dir: Path, out: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for file in model_dir.iterdir():
        if file.is_file() and not file.name.startswith("model.onnx"):
            try:
                os.link(file, out / file.name)
            except OSError:
                shutil.copy2(file, out / file.name)
    with tempfile.TemporaryDirectory(dir=out) as scratch:
        quantize_dynamic(
            str(model_dir / "model.onnx"),
            str(Path(scratch) / "model.onnx"),
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            weight_type=QuantType.QInt8,
            use_external_data_format=True,
        )
        # Loaded whole, then written beside the graph under the name the other folders use.
        onnx.save_model(
            onnx.load(str(Path(scratch) / "model.onnx")),
            str(out / "model.onnx"),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location="model.onnx.data",
            size_threshold=1024,
        )
    manifest = json.loads((model_dir / MANIFEST).read_text())
    manifest["onnx"]["weights"] = "int8 (onnxruntime quantize_dynamic, MatMul, per channel)"
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2))


def logprob_drift(model, onnx_path: Path, ids: list) -> dict:
    """One prefill of `ids` in onnxruntime against PyTorch: log-probabilities of the next token at every position."""
    import onnxruntime

    from .export import io_names, kv_shape

    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    inputs, _ = io_names(model.config.num_hidden_layers)
    feed = {
        "input_ids": np.array([ids], dtype=np.int64),
        "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
        "position_ids": np.arange(len(ids))[None, :],
        "logits_positions": np.arange(len(ids)),
        **{name: np.zeros(kv_shape(model.config, 1, 0), dtype=np.float32) for name in inputs[4:]},
    }
    served = torch.log_softmax(torch.from_numpy(session.run(["logits"], feed)[0][0]).double(), -1)
    with torch.no_grad():
        trained = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), -1)
    chosen = torch.tensor(ids[1:])
    positions = torch.arange(len(ids) - 1)
    difference = (served[positions, chosen] - trained[positions, chosen]).abs()
    kl = (trained.exp() * (trained - served)).sum(-1)
    return {
        "positions": len(ids) - 1,
        "maxLogprobDifference": float(difference.max()),
        "meanLogprobDifference": float(difference.mean()),
        "meanKl": float(kl.mean()),
        "greedyAgreement": float((served.argmax(-1) == trained.argmax(-1)).double().mean()),
    }


def main() -> None:
    from transformers import AutoTokenizer

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, type=Path, help="a prepared folder (longhaul model prepare)")
    parser.add_argument("--out", required=True, type=Path, help="where the int8 copy goes (replaced)")
    args = parser.parse_args()
    print("[quantize] writing the int8 graph", file=sys.stderr, flush=True)
    quantize(args.model, args.out)
    model = load_model(args.model).eval()
    ids = AutoTokenizer.from_pretrained(str(args.model))(TEXT).input_ids
    drift = {name: logprob_drift(model, folder / "model.onnx", ids) for name, folder in (("float32", args.model), ("int8", args.out))}
    sizes = {name: (folder / "model.onnx.data").stat().st_size for name, folder in (("float32", args.model), ("int8", args.out))}
    print(json.dumps({"drift": drift, "onnxDataBytes": sizes}))


if __name__ == "__main__":
    main()
