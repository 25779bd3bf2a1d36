"""Time one decode step of prepared folders' ONNX graphs side by side, and where its CPU goes.

Each case is ROWSxPAST: that many rows decode one token each over a random key/value cache of PAST tokens.
The folders' sessions alternate, so on a shared machine both see the same load; the fastest of
`--repeats` alternations is reported (the figure least moved by other processes). With `--profile`, one
thread and onnxruntime's profiler give each operator type's share of the kernel time instead.

Run (from gpu/engine):
    ../../.longhaul/tools/venv/bin/python -m longhaul_engine.decode_step --model OLD --model NEW --cases 1x80,8x80,8x576
One JSON line per case on stdout; `fastestStepMs` in the order of the --model flags.
"""

import argparse
import collections
import json
import time
from pathlib import Path

import numpy as np
import onnxruntime

from .export import io_names

MANIFEST = "longhaul-model.json"


def open_session(folder: Path, threads: int, profile: bool):
    manifest = json.loads((folder / MANIFEST).read_text())
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # as the onnx policy runs it
    options.enable_profiling = profile
    return manifest, onnxruntime.InferenceSession(str(folder / manifest["onnx"]["file"]), options, providers=["CPUExecutionProvider"])


def decode_feed(manifest: dict, rows: int, past: int) -> dict:
    generator = np.random.default_rng(0)
    inputs, _ = io_names(manifest["layers"])
    cache_shape = (rows, manifest["kvHeads"], past, manifest["headDim"])
    return {
        "input_ids": np.ones((rows, 1), dtype=np.int64),
        "attention_mask": np.ones((rows, past + 1), dtype=np.int64),
        "position_ids": np.full((rows, 1), past, dtype=np.int64),
        "logits_positions": np.array([0], dtype=np.int64),
        **{name: generator.random(cache_shape, dtype=np.float32) for name in inputs[4:]},
    }


def fastest_steps(folders: list, cases: list, repeats: int, threads: int) -> list:
    sessions = [open_session(folder, threads, profile=False) for folder in folders]
    results = []
    for rows, past in cases:
        feeds = [decode_feed(manifest, rows, past) for manifest, _ in sessions]
        fastest = [float("inf")] * len(sessions)
        for _ in range(repeats):
            for index, (_, session) in enumerate(sessions):
                started = time.perf_counter()
                session.run(None, feeds[index])
                fastest[index] = min(fastest[index], (time.perf_counter() - started) * 1000)
        results.append({"rows": rows, "past": past, "fastestStepMs": [round(ms, 1) for ms in fastest]})
    return results


def operator_shares(folder: Path, rows: int, past: int, repeats: int) -> dict:
    manifest, session = open_session(folder, threads=1, profile=True)
    feed = decode_feed(manifest, rows, past)
    for _ in range(repeats):
        session.run(None, feed)
    trace = Path(session.end_profiling())
    events = json.loads(trace.read_text())
    trace.unlink()
    per_type = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            per_type[event["args"]["op_name"]] += event["dur"]
    total = sum(per_type.values())
    return {"folder": str(folder), "rows": rows, "past": past, "share": {op: round(us / total, 3) for op, us in per_type.most_common(8)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", required=True, type=Path, help="a prepared folder (repeat to compare)")
    parser.add_argument("--cases", default="1x80,8x80,32x80,8x576", help="comma-separated ROWSxPAST (default 1x80,8x80,32x80,8x576)")
    parser.add_argument("--repeats", type=int, default=9, help="alternations per case (default 9)")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads (default 2)")
    parser.add_argument("--profile", action="store_true", help="operator types' share of the kernel time (one thread) instead")
    args = parser.parse_args()
    cases = [tuple(int(part) for part in case.split("x")) for case in args.cases.split(",")]
    if args.profile:
        for folder in args.model:
            for rows, past in cases:
                print(json.dumps(operator_shares(folder, rows, past, args.repeats)), flush=True)
        return
    for result in fastest_steps(args.model, cases, args.repeats, args.threads):
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
