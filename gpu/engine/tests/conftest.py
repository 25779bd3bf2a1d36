"""Shared test setup: few torch threads (the machine's cores are shared), the engine importable."""

import sys
from pathlib import Path

import torch

torch.set_num_threads(2)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
