"""Export a Llama-family causal LM to ONNX with explicit past key values, and check it against PyTorch.

Graph (model.onnx, weights in model.onnx.data): inputs `input_ids`, `attention_mask` (past + new), `position_ids`,
`logits_positions` (which new positions get logits: the last one while decoding, so a 512-token prefill
does not pay for 512 × vocab logits), `past_key_values.{i}.{key,value}` ([batch, kv_heads, past, head_dim]);
outputs `logits` ([batch, kept, vocab]), `present.{i}.{key,value}` (past and new: [batch, kv_heads, past + new,
head_dim]) and `new.{i}.{key,value}` (the new positions' keys and values alone: [batch, kv_heads, new, head_dim]).
A past of length 0 is a valid input, so one graph serves prefill and decode. A caller that keeps its own cache
fetches `logits` and `new.*` only: onnxruntime-node copies every fetched output into a fresh buffer, and the
present tensors are the whole cache (29 MB a step at 8 rows × 81 columns).

Attention is exported grouped (`grouped_query_attention` below) rather than with transformers' eager
attention, which repeats each key/value head for every query head of its group: in the graph that is an
Expand of the whole cache per layer and step (17 % of the CPU at 8 decoding rows). Here the query heads of a
group are folded into the query length instead, so the cache is read as it is.

Used by longhaul_engine.prepare; run alone on a prepared folder:
    ../../.longhaul/tools/venv/bin/python -m longhaul_engine.export --model DIR
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from transformers import AttentionInterface, DynamicCache
from transformers.masking_utils import AttentionMaskInterface, eager_mask

OPSET = 18
ATTENTION = "longhaul_grouped"


def grouped_query_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """Eager attention without repeating key/value heads. query [batch, heads, new, dim], key and value
    [batch, kv_heads, total, dim], the additive mask [batch, 1, new, total]. Query head h belongs to key/value
    head h // groups (transformers' repeat_kv order), so [batch, heads, new, dim] reshapes (no copy) to
    [batch, kv_heads, groups * new, dim] and one matmul per key/value head serves its whole group."""
    batch, heads, new, dim = query.shape
    kv_heads = key.shape[1]
    grouped = (query * scaling).reshape(batch, kv_heads, -1, dim)
    scores = torch.matmul(grouped, key.transpose(2, 3)).reshape(batch, kv_heads, heads // kv_heads, new, -1)
    if attention_mask is not None:
        scores = scores + attention_mask.unsqueeze(2)
    weights = torch.nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    output = torch.matmul(weights.reshape(batch, kv_heads, -1, key.shape[-2]), value)
    return output.reshape(batch, heads, new, dim).transpose(1, 2).contiguous(), weights.reshape(batch, heads, new, -1)


AttentionInterface.register(ATTENTION, grouped_query_attention)
AttentionMaskInterface.register(ATTENTION, eager_mask)


class PastKeyValuesWrapper(torch.nn.Module):
    """Flat tensors in, flat tensors out; the DynamicCache the model wants is rebuilt inside."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.layers = model.config.num_hidden_layers

    def forward(self, input_ids, attention_mask, position_ids, logits_positions, *past):
        cache = DynamicCache(config=self.model.config)
        for layer in range(self.layers):
            cache.update(past[2 * layer], past[2 * layer + 1], layer)
        output = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
            return_dict=True,
            logits_to_keep=logits_positions,
        )
        presents = []
        for layer in output.past_key_values.layers:
            presents.extend([layer.keys, layer.values])
        return (output.logits, *presents)


def io_names(layers: int):
    past = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    present = [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    return ["input_ids", "attention_mask", "position_ids", "logits_positions", *past], ["logits", *present]


def new_key_value_names(layers: int):
    """The outputs `add_new_key_value_outputs` appends after `io_names`' outputs."""
    return [f"new.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]


def kv_shape(config, batch: int, length: int):
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return (batch, config.num_key_value_heads, length, head_dim)


def export_onnx(model, path: Path) -> None:
    config = model.config
    wrapper = PastKeyValuesWrapper(model).eval()
    batch, new, past_length = 2, 3, 4
    input_ids = torch.randint(0, config.vocab_size, (batch, new), dtype=torch.long)
    attention_mask = torch.ones((batch, past_length + new), dtype=torch.long)
    position_ids = torch.arange(past_length, past_length + new, dtype=torch.long).repeat(batch, 1)
    logits_positions = torch.tensor([0, new - 1], dtype=torch.long)
    past = [torch.zeros(kv_shape(config, batch, past_length)) for _ in range(2 * config.num_hidden_layers)]
    inputs, outputs = io_names(config.num_hidden_layers)
    dynamic = {
        "input_ids": {0: "batch", 1: "new"},
        "attention_mask": {0: "batch", 1: "total"},
        "position_ids": {0: "batch", 1: "new"},
        "logits_positions": {0: "kept"},
        "logits": {0: "batch", 1: "kept"},
    }
    for name in inputs[4:]:
        dynamic[name] = {0: "batch", 2: "past"}
    for name in outputs[1:]:
        dynamic[name] = {0: "batch", 2: "total"}
    previous = config._attn_implementation
    config._attn_implementation = ATTENTION  # only for the trace: the PyTorch model keeps its own afterwards
    try:
        with torch.no_grad():
            torch.onnx.export(
                wrapper,
                (input_ids, attention_mask, position_ids, logits_positions, *past),
                str(path),
                dynamo=False,
                input_names=inputs,
                output_names=outputs,
                dynamic_axes=dynamic,
                opset_version=OPSET,
                do_constant_folding=True,
            )
    finally:
        config._attn_implementation = previous
    import onnx

    graph = onnx.load(str(path))
    add_new_key_value_outputs(graph.graph, config.num_hidden_layers)
    externalize_weights(graph, path)


def add_new_key_value_outputs(graph, layers: int) -> None:
    """Name the keys and values of the new positions as outputs `new.{i}.{key,value}`: each `present.{i}.*`
    is a Concat of the past and the new positions along the column axis, and its second input is what a
    caller that keeps the cache itself needs."""
    from onnx import helper

    producers = {output: node for node in graph.node for output in node.output}
    present_outputs = {output.name: output for output in graph.output}
    for layer in range(layers):
        for kind in ("key", "value"):
            present = f"present.{layer}.{kind}"
            node = producers.get(present)
            # (The keys' first input is the past through a one-input Concat the exporter adds; the values' is the past.)
            axis = next((attribute.i for attribute in node.attribute if attribute.name == "axis"), None) if node else None
            if node is None or node.op_type != "Concat" or len(node.input) != 2 or axis not in (-2, 2):
                raise ValueError(f"{present} is not a Concat of the past and the new positions on the column axis in the exported graph")
            name = f"new.{layer}.{kind}"  # new_key_value_names' order
            graph.node.append(helper.make_node("Identity", [node.input[1]], [name], name=f"{name}.identity"))
            shape = [dimension.dim_param or dimension.dim_value for dimension in present_outputs[present].type.tensor_type.shape.dim]
            shape[2] = "new"
            graph.output.append(helper.make_tensor_value_info(name, present_outputs[present].type.tensor_type.elem_type, shape))


def externalize_weights(model, path: Path) -> None:
    """Save the loaded graph `model` to `path` with its weights in `<name>.data` beside it: onnxruntime memory-maps
    external data, which saves about 300 MB of resident memory for SmolLM2-135M compared with weights inline in
    the protobuf."""
    import onnx

    data = path.with_name(path.name + ".data")
    if data.exists():
        data.unlink()
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location=data.name, size_threshold=1024)
    data.chmod(0o644)


def check_onnx(model, path: Path, prompt_ids: list) -> dict:
    """Prefill then one decode step in onnxruntime and in PyTorch; the largest logit difference."""
    import onnxruntime

    config = model.config
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs, _ = io_names(config.num_hidden_layers)
    ids = np.array([prompt_ids], dtype=np.int64)
    feed = {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "position_ids": np.arange(ids.shape[1])[None, :],
        "logits_positions": np.arange(ids.shape[1]),
    }
    for name in inputs[4:]:
        feed[name] = np.zeros(kv_shape(config, 1, 0), dtype=np.float32)
    first = session.run(None, feed)
    next_id = int(first[0][0, -1].argmax())
    total = ids.shape[1] + 1
    feed = {
        "input_ids": np.array([[next_id]], dtype=np.int64),
        "attention_mask": np.ones((1, total), dtype=np.int64),
        "position_ids": np.array([[total - 1]], dtype=np.int64),
        "logits_positions": np.array([0], dtype=np.int64),
    }
    for index, name in enumerate(inputs[4:]):
        feed[name] = first[1 + index]
    second = session.run(None, feed)
    with torch.no_grad():
        reference = model(input_ids=torch.tensor([prompt_ids + [next_id]])).logits.numpy()
    difference = max(float(np.abs(first[0][0] - reference[0, :-1]).max()), float(np.abs(second[0][0, -1] - reference[0, -1]).max()))
    assert difference < 1e-3, f"ONNX logits differ from PyTorch by {difference}"
    return {"maxLogitDifference": difference, "opset": OPSET}


def main() -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, type=Path, help="a prepared Hugging Face layout folder")
    args = parser.parse_args()
    model = AutoModelForCausalLM.from_pretrained(str(args.model), dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(args.model))
    export_onnx(model, args.model / "model.onnx")
    print(check_onnx(model, args.model / "model.onnx", tokenizer("The capital of France is").input_ids), file=sys.stdout)


if __name__ == "__main__":
    main()
