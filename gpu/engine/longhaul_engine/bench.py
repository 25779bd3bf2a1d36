"""Engine speed and memory on this machine, through the real train path (manifest → proximal pass →
forward/backward → AdamW → atomic save), for a SmolLM2-135M-shaped Llama with random weights
(30 layers, hidden 576, 9 heads / 3 KV heads, intermediate 1536, vocab 49152, tied embeddings).

Run (from gpu/engine):
    ../../.longhaul/tools/venv/bin/python -m longhaul_engine.bench --mode both --samples 8 --tokens 512

Each mode runs in its own process so peak RSS is that mode's alone. Prints one JSON line per mode.
`--proximal separate` runs the no-grad π_prox pass for every sample instead of taking the first
minibatch's from its own forward (the default, `reuse`): the two side by side measure what the reuse saves.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from .manifest import rl_hyperparameters

SMOLLM2_135M = dict(
    vocab_size=49152,
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    max_position_embeddings=8192,
    tie_word_embeddings=True,
    rope_theta=100000.0,
    bos_token_id=1,
    eos_token_id=2,
)
TRAINABLE = {
    "full": {"mode": "full"},
    "lora": {
        "mode": "lora",
        "rank": 16,
        "alpha": 32,
        "targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    },
    "head": {"mode": "freeze", "trainPatterns": ["lm_head"]},
}


def make_manifest(work: Path, mode: str, samples: int, tokens: int, micro: int) -> Path:
    base = work / "v0"
    if not base.exists():
        torch.manual_seed(0)
        LlamaForCausalLM(LlamaConfig(**SMOLLM2_135M)).save_pretrained(base, safe_serialization=True)
    generator = torch.Generator().manual_seed(1)
    prompt = tokens // 4
    rows = []
    for i in range(samples):
        ids = torch.randint(3, SMOLLM2_135M["vocab_size"], (tokens,), generator=generator).tolist()
        rows.append(
            {
                "id": f"s{i}",
                "groupId": f"g{i // 4}",
                "reward": float(i % 2),
                "tokenIds": ids,
                "lossMask": [0] * prompt + [1] * (tokens - prompt),
                "behaviourLogprobs": [0.0] * prompt + [-10.0] * (tokens - prompt),
                "policyVersions": [-1] * prompt + [0] * (tokens - prompt),
                "turnIndices": [0] * tokens,
            }
        )
    hp = rl_hyperparameters(learningRate=1e-5, microBatchSize=micro, trainable=TRAINABLE[mode])
    document = {
        "schemaVersion": 1,
        "kind": "rl",
        "runId": "bench",
        "step": 0,
        "basePolicy": {"version": 0, "modelDir": str(base)},
        "outputDir": str(work / f"v1-{mode}"),
        "outputPolicyVersion": 1,
        "hyperparameters": hp,
        "samples": rows,
    }
    path = work / f"manifest-{mode}.json"
    path.write_text(json.dumps(document))
    return path


def one_mode(args) -> dict:
    from .train import rl_step, run

    work = Path(args.work)
    path = make_manifest(work, args.mode, args.samples, args.tokens, args.micro_batch)
    started = time.time()
    m = run(str(path), onnx=False, step_fn=rl_step if args.proximal == "reuse" else partial(rl_step, reuse_update_forward=False))
    separate = args.samples - m["proximalFromUpdate"]
    return {
        "mode": args.mode,
        "proximal": args.proximal,
        "samples": args.samples,
        "tokensPerSample": args.tokens,
        "microBatch": args.micro_batch,
        "threads": torch.get_num_threads(),
        "trainableParameters": m["trainableParameters"],
        "forwardBackwardTokensPerSecond": round(m["tokensPerSecond"], 1),
        # Tokens of the samples the separate pass scored, per second of it (null: no pass ran).
        "proximalTokensPerSecond": round(separate * args.tokens / max(m["proximalSeconds"], 1e-9), 1) if separate else None,
        "updateSeconds": m["updateSeconds"],
        "proximalSeconds": m["proximalSeconds"],
        "saveSeconds": m["saveSeconds"],
        "stepSeconds": round(time.time() - started, 1),
        "peakRssGiB": round(m["peakRssBytes"] / 2**30, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=["full", "lora", "head", "both"], default="both")
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--micro-batch", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument(
        "--proximal",
        choices=["reuse", "separate"],
        default="reuse",
        help="π_prox of the first minibatch from its own forward, or a separate pass",
    )
    parser.add_argument("--work", default=None, help="scratch dir (default: a fresh temp dir)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.mode != "both":
        result = one_mode(args)
        print(json.dumps(result), flush=True)
        return
    with tempfile.TemporaryDirectory(prefix="longhaul-bench-") as work:
        for mode in ("full", "lora"):
            command = [
                sys.executable,
                "-m",
                "longhaul_engine.bench",
                "--mode",
                mode,
                "--samples",
                str(args.samples),
                "--tokens",
                str(args.tokens),
                "--micro-batch",
                str(args.micro_batch),
                "--threads",
                str(args.threads),
                "--proximal",
                args.proximal,
                "--work",
                args.work or work,
            ]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            print(done.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
