"""Longhaul's training engine: PyTorch only, no Temporal. Driven by the gpu-train worker."""
