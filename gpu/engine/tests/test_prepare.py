"""Model preparation without downloads: a tiny random Llama exports to ONNX whose logits match PyTorch."""

import json

import numpy as np
import onnx
import onnxruntime
import torch

from longhaul_engine.export import check_onnx, export_onnx, io_names, kv_shape, new_key_value_names
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
    assert [node.name for node in session.get_outputs()] == outputs + new_key_value_names(2)
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
        last, past = out[0][0, -1], out[1 : 1 + len(inputs[4:])]
    with torch.no_grad():
        reference = model(input_ids=torch.tensor([ids])).logits[0, -1].numpy()
    assert float(np.abs(last - reference).max()) < 1e-4


def test_the_new_outputs_are_the_last_columns_of_the_present_ones(tmp_path):
    model = tiny_model(vocab_size=300, bos=1, eos=2)
    export_onnx(model, tmp_path / "model.onnx")
    session = onnxruntime.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    inputs, outputs = io_names(2)
    rng = np.random.default_rng(0)
    feed = {
        "input_ids": np.array([[5, 6, 7], [8, 9, 10]], dtype=np.int64),
        "attention_mask": np.ones((2, 4 + 3), dtype=np.int64),
        "position_ids": np.array([[4, 5, 6], [4, 5, 6]], dtype=np.int64),
        "logits_positions": np.array([2], dtype=np.int64),
        **{name: rng.standard_normal(kv_shape(model.config, 2, 4)).astype(np.float32) for name in inputs[4:]},
    }
    names = outputs[1:] + new_key_value_names(2)
    values = dict(zip(names, session.run(names, feed)))
    for layer in range(2):
        for kind in ("key", "value"):
            new, present = values[f"new.{layer}.{kind}"], values[f"present.{layer}.{kind}"]
            assert new.shape == (2, model.config.num_key_value_heads, 3, present.shape[-1])
            np.testing.assert_array_equal(new, present[:, :, 4:])
            np.testing.assert_array_equal(present[:, :, :4], feed[f"past_key_values.{layer}.{kind}"])


def test_attention_reads_the_cache_without_repeating_key_value_heads(tmp_path):
    model = tiny_model(vocab_size=300, bos=1, eos=2)
    assert model.config.num_attention_heads > model.config.num_key_value_heads
    export_onnx(model, tmp_path / "model.onnx")
    graph = onnx.load(str(tmp_path / "model.onnx"), load_external_data=False).graph
    assert [node.name for node in graph.node if node.op_type == "Expand" and "self_attn" in node.name] == []
    assert model.config._attn_implementation != "longhaul_grouped"


def test_a_left_padded_row_gives_the_logits_of_the_same_row_alone(tmp_path):
    model = tiny_model(vocab_size=300, bos=1, eos=2)
    export_onnx(model, tmp_path / "model.onnx")
    session = onnxruntime.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    inputs, _ = io_names(2)
    long, short = [3, 14, 15, 92, 65, 35], [27, 18, 28]
    pad = len(long) - len(short)
    empty = {name: np.zeros(kv_shape(model.config, 2, 0), dtype=np.float32) for name in inputs[4:]}
    feed = {
        "input_ids": np.array([long, [0] * pad + short], dtype=np.int64),
        "attention_mask": np.array([[1] * len(long), [0] * pad + [1] * len(short)], dtype=np.int64),
        "position_ids": np.array([list(range(len(long))), [0] * pad + list(range(len(short)))], dtype=np.int64),
        "logits_positions": np.array([len(long) - 1], dtype=np.int64),
        **empty,
    }
    logits = session.run(None, feed)[0][:, -1]
    with torch.no_grad():
        for row, ids in enumerate([long, short]):
            reference = model(input_ids=torch.tensor([ids])).logits[0, -1].numpy()
            assert float(np.abs(logits[row] - reference).max()) < 1e-4, row
