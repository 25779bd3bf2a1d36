"""A small LoRA: W x + (α/r) · B A x on chosen nn.Linear modules, B = 0 at the start so the model
is unchanged until trained. Saved weights are always merged (W + (α/r) · B A), so the served policy
and the ONNX export need no adapter support; the adapter itself is kept in train_state.safetensors
so the next step continues with the same A, B and Adam moments (the base is recovered by
un-merging: W = W_saved − (α/r) · B A).

Nothing to run: used by train.py and sft.py; tested in tests/test_train.py.
"""

import math

import torch
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, rank: int, alpha: float, generator: torch.Generator):
        super().__init__()
        self.base = base
        self.base.requires_grad_(False)
        self.scale = alpha / rank
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features, dtype=base.weight.dtype))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank, dtype=base.weight.dtype))
        bound = 1.0 / math.sqrt(base.in_features)
        with torch.no_grad():
            self.lora_a.uniform_(-bound, bound, generator=generator)

    def delta(self) -> torch.Tensor:
        return (self.lora_b @ self.lora_a) * self.scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_a.t() @ self.lora_b.t()) * self.scale


def attach(model: nn.Module, rank: int, alpha: float, targets: list, seed: int) -> dict:
    """Wrap every nn.Linear whose name ends with one of `targets`; returns {module name: LoRALinear}."""
    generator = torch.Generator().manual_seed(seed)
    chosen = [
        (name, module)
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear) and any(name.split(".")[-1] == t for t in targets)
    ]
    assert chosen, f"LoRA targets {targets} match no linear layer of the model"
    wrapped = {}
    for name, module in chosen:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        wrapped[name] = LoRALinear(module, rank, alpha, generator)
        setattr(parent, child, wrapped[name])
    return wrapped


def unmerge(model: nn.Module, adapter: dict, rank: int, alpha: float) -> None:
    """Subtract a saved adapter {"<module>.lora_a"/"lora_b": tensor} from the plain weights."""
    scale = alpha / rank
    with torch.no_grad():
        for key, a in adapter.items():
            if key.endswith(".lora_a"):
                module = key[: -len(".lora_a")]
                b = adapter[module + ".lora_b"]
                model.get_submodule(module).weight -= (b @ a) * scale


def merged_state_dict(model: nn.Module) -> dict:
    """The model's state dict with every LoRALinear folded back into a plain `weight`/`bias`."""
    state = {}
    wrapped = {name: m for name, m in model.named_modules() if isinstance(m, LoRALinear)}
    for key, value in model.state_dict().items():
        module, _, leaf = key.rpartition(".")
        if module in wrapped:
            continue  # lora_a / lora_b: folded below
        owner = module.rpartition(".")[0]
        if module.endswith(".base") and owner in wrapped:
            value = value + wrapped[owner].delta().detach() if leaf == "weight" else value
            key = f"{owner}.{leaf}"
        state[key] = value.detach()
    return state
