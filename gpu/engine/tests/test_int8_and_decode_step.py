"""The int8 copy of a prepared folder serves the same graph contract with a measured drift, and the
decode-step timer runs both folders' graphs side by side."""

import json
from pathlib import Path

import onnx
import onnxruntime
from engine_fixtures import make_tiny_model_dir

from longhaul_engine.checkpoint import load_model
from longhaul_engine.decode_step import fastest_steps, operator_shares
from longhaul_engine.export import export_onnx, io_names, new_key_value_names
from longhaul_engine.quantize import logprob_drift, quantize

IDS = [5, 17, 42, 99, 7, 3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46]


def prepared_folder(path):
    folder = make_tiny_model_dir(path)
    model = load_model(folder)
    export_onnx(model, folder / "model.onnx")
    config = model.config
    manifest = {"format": 3, "layers": config.num_hidden_layers, "kvHeads": config.num_key_value_heads, "headDim": 16}
    manifest["onnx"] = {"file": "model.onnx"}
    (folder / "longhaul-model.json").write_text(json.dumps(manifest))
    return folder, model


def test_the_int8_copy_keeps_inputs_and_outputs_and_reports_its_drift(tmp_path):
    folder, model = prepared_folder(tmp_path / "fp32")
    quantize(folder, tmp_path / "int8")
    graph = onnx.load(str(tmp_path / "int8" / "model.onnx"), load_external_data=False).graph
    assert any(node.op_type in ("DynamicQuantizeMatMul", "MatMulInteger") for node in graph.node)
    assert not any(node.op_type == "MatMul" and "proj" in node.name for node in graph.node)
    session = onnxruntime.InferenceSession(str(tmp_path / "int8" / "model.onnx"), providers=["CPUExecutionProvider"])
    inputs, outputs = io_names(model.config.num_hidden_layers)
    assert [node.name for node in session.get_inputs()] == inputs
    assert [node.name for node in session.get_outputs()] == outputs + new_key_value_names(model.config.num_hidden_layers)
    assert json.loads((tmp_path / "int8" / "longhaul-model.json").read_text())["onnx"]["weights"].startswith("int8")
    assert (tmp_path / "int8" / "model.safetensors").exists()
    float32, int8 = logprob_drift(model, folder / "model.onnx", IDS), logprob_drift(model, tmp_path / "int8" / "model.onnx", IDS)
    assert float32["maxLogprobDifference"] < 1e-4, float32
    assert 1e-4 < int8["maxLogprobDifference"] < 1.0, int8
    assert int8["positions"] == len(IDS) - 1


def test_the_decode_step_timer_alternates_folders_and_profiles_operators(tmp_path):
    folder, _ = prepared_folder(tmp_path / "a")
    (result,) = fastest_steps([folder, folder], [(2, 8)], repeats=2, threads=1)
    assert result["rows"] == 2 and result["past"] == 8
    assert len(result["fastestStepMs"]) == 2 and all(ms > 0 for ms in result["fastestStepMs"])
    shares = operator_shares(folder, rows=2, past=8, repeats=2)["share"]
    assert "MatMul" in shares and 0 < sum(shares.values()) <= 1.001
    assert not list(Path.cwd().glob("onnxruntime_profile*.json")), "the profiler's trace is left behind"
