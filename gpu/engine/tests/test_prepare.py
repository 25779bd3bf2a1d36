"""Model preparation without downloads: a tiny random Llama exports to ONNX whose logits match PyTorch."""

import json

import numpy as np
import onnxruntime
import torch

from longhaul_engine.export import check_onnx, export_onnx, io_names, kv_shape
from longhaul_engine.prepare import tiny_model


def test_a_tiny_llama_exports_to_onnx_matching_pytorch_logits(tmp_path):
    model = tiny_model(vocab_size=300, bos=1, eos=2)
    export_onnx(model, tmp_path / "model.onnx")
    result = check_onnx(model, tmp_path / "model.onnx", [5, 17, 42, 99, 7])
    assert result["opset"] == 18
    assert result["maxLogitDifference"] < 1e-4, result


def test_the_exported_graph_names_past_and_present_per_layer(tmp_path):
    model = tiny_model(vocab_size=300, bos=1, eos=2)
    export_onnx(model, tmp_path / "model.onnx")
    session = onnxruntime.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    inputs, outputs = io_names(2)
    assert [node.name for node in session.get_inputs()] == inputs
    assert [node.name for node in session.get_outputs()] == outputs
    assert inputs[3:6] == ["logits_positions", "past_key_values.0.key", "past_key_values.0.value"]


def test_decoding_with_the_cache_equals_one_full_pass(tmp_path):
    model = tiny_model(vocab_size=300, bos=1, eos=2)
    export_onnx(model, tmp_path / "model.onnx")
    session = onnxruntime.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    inputs, _ = io_names(2)
    ids = [3, 14, 15, 92, 65, 35]
    past = [np.zeros(kv_shape(model.config, 1, 0), dtype=np.float32) for _ in inputs[4:]]
    last = None
    for position, token in enumerate(ids):
        feed = {
            "input_ids": np.array([[token]], dtype=np.int64),
            "attention_mask": np.ones((1, position + 1), dtype=np.int64),
            "position_ids": np.array([[position]], dtype=np.int64),
            "logits_positions": np.array([0], dtype=np.int64),
            **dict(zip(inputs[4:], past)),
        }
        out = session.run(None, feed)
        last, past = out[0][0, -1], out[1:]
    with torch.no_grad():
        reference = model(input_ids=torch.tensor([ids])).logits[0, -1].numpy()
    assert float(np.abs(last - reference).max()) < 1e-4
