"""Print what the engine runs on as one JSON line.

Run: cd gpu/engine && ../../.longhaul/tools/venv/bin/python -m longhaul_engine.info
"""

import json
import platform

import torch


def engine_info() -> dict:
    return {
        "torch": torch.__version__,
        "cuda": torch.cuda.is_available(),
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
    }


if __name__ == "__main__":
    print(json.dumps(engine_info()))
