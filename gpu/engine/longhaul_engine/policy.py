"""The trainable policy shared by RL (train.py) and SFT (sft.py): model, which weights train (full,
LoRA, freeze-by-pattern), AdamW, optional EMA — loaded from a version dir so that a step resumes
exactly where the previous one stopped, and turned back into the files of the next version.

Resume rule: the previous version's optimizer, adapter and raw weights are reused when its
engine_state.json records the same trainable recipe and the same EMA on/off; otherwise (a new
recipe, or a prepared base model) training starts from the served weights with fresh state.

Nothing to run: used by train.py and sft.py.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

import torch

from . import lora
from .checkpoint import (
    MODEL_FILE,
    OPTIMIZER_FILE,
    TRAIN_STATE_FILE,
    engine_state,
    load_model,
    load_optimizer_state,
    load_train_state,
    served_tensors,
)
from .errors import CorruptCheckpoint, InvalidBatch
from .manifest import ENGINE_STATE, Hyperparameters, read_engine_state


@dataclass
class Policy:
    model: torch.nn.Module
    parameters: dict  # name → trainable Parameter, in a fixed order
    optimizer: torch.optim.Optimizer
    hyperparameters: Hyperparameters
    ema: dict = field(default_factory=dict)  # name → shadow tensor (empty without EMA)
    optimizer_steps: int = 0
    resumed: bool = False

    def step(self) -> float:
        """Clip, apply AdamW, update EMA; returns the gradient norm before clipping. A gradient whose
        norm is not finite (a NaN or overflow anywhere) is dropped: no update, no optimizer step."""
        clip = self.hyperparameters.gradient_clip
        norm = torch.nn.utils.clip_grad_norm_(list(self.parameters.values()), clip if clip is not None else float("inf"))
        if not torch.isfinite(norm):
            self.optimizer.zero_grad(set_to_none=True)
            return float(norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.optimizer_steps += 1
        decay = self.hyperparameters.ema_decay
        if decay is not None:
            with torch.no_grad():
                for name, parameter in self.parameters.items():
                    self.ema[name].mul_(decay).add_(parameter.detach(), alpha=1.0 - decay)
        return float(norm)

    def served_state(self) -> dict:
        """Weights to publish: EMA swapped in when on, LoRA merged."""
        raw = {name: p.detach().clone() for name, p in self.parameters.items()} if self.ema else {}
        with torch.no_grad():
            for name, shadow in self.ema.items():
                self.parameters[name].copy_(shadow)
            state = lora.merged_state_dict(self.model)
            for name, value in raw.items():
                self.parameters[name].copy_(value)
        return state

    def files(self, *, policy_version: int, run_id: str, step: int, kind: str, metrics: dict) -> dict:
        hp, mode = self.hyperparameters, self.hyperparameters.trainable["mode"]
        train_state = {}
        if mode == "lora":
            train_state.update({f"lora.{n}": p.detach().clone() for n, p in self.parameters.items()})
        elif self.ema:
            train_state.update({f"raw.{n}": p.detach().clone() for n, p in self.parameters.items()})
        if mode == "lora" and self.ema:
            train_state.update({f"ema.{n}": t.clone() for n, t in self.ema.items()})
        files = {
            MODEL_FILE: served_tensors(self.served_state(), self.model.config.tie_word_embeddings),
            OPTIMIZER_FILE: {"names": list(self.parameters), "state": self.optimizer.state_dict()},
            ENGINE_STATE: engine_state(policy_version, run_id, step, kind, hp.trainable, bool(self.ema), self.optimizer_steps),
            "metrics.json": metrics,
        }
        if train_state:
            files[TRAIN_STATE_FILE] = served_tensors(train_state, tied=False)
        return files


def _select_by_pattern(model: torch.nn.Module, patterns: list) -> dict:
    compiled = [re.compile(p) for p in patterns]
    canonical = {id(p): n for n, p in model.named_parameters()}
    chosen = {}
    for alias, parameter in model.named_parameters(remove_duplicate=False):
        if any(c.search(alias) for c in compiled):
            chosen[canonical[id(parameter)]] = parameter
    if not chosen:
        raise InvalidBatch(f"hyperparameters.trainable.trainPatterns {patterns} match no parameter of the model")
    return {n: chosen[n] for n in canonical.values() if n in chosen}


def _trainable(model, trainable: dict, resumable: bool, train_state: dict, seed: int) -> dict:
    mode = trainable["mode"]
    model.requires_grad_(mode == "full")
    if mode == "full":
        return dict(model.named_parameters())
    if mode == "freeze":
        chosen = _select_by_pattern(model, trainable["trainPatterns"])
        for parameter in chosen.values():
            parameter.requires_grad_(True)
        return chosen
    rank, alpha = trainable["rank"], trainable["alpha"]
    if resumable:
        served = {k[len("ema.") :]: v for k, v in train_state.items() if k.startswith("ema.")} or {
            k[len("lora.") :]: v for k, v in train_state.items() if k.startswith("lora.")
        }
        lora.unmerge(model, served, rank, alpha)
    lora.attach(model, rank, alpha, trainable["targets"], seed)
    return {n: p for n, p in model.named_parameters() if n.endswith((".lora_a", ".lora_b"))}


def load_policy(model_dir: Path, hp: Hyperparameters) -> Policy:
    """Load a version dir for training with the recipe in `hp` (see the resume rule above)."""
    torch.manual_seed(hp.seed)
    model = load_model(model_dir)
    prior = read_engine_state(model_dir)
    resumable = prior is not None and prior.get("trainable") == hp.trainable and prior.get("ema") == (hp.ema_decay is not None)
    train_state = load_train_state(model_dir) if resumable else {}
    parameters = _trainable(model, hp.trainable, resumable, train_state, hp.seed)
    ema = {}
    if hp.ema_decay is not None:
        ema = {n: train_state.get(f"ema.{n}", p.detach()).clone() for n, p in parameters.items()}
    with torch.no_grad():
        for name, parameter in parameters.items():
            source = train_state.get(f"lora.{name}", train_state.get(f"raw.{name}"))
            if source is not None:
                parameter.copy_(source)
    optimizer = torch.optim.AdamW(list(parameters.values()), lr=hp.learning_rate, betas=hp.adam_betas, weight_decay=hp.weight_decay)
    policy = Policy(model, parameters, optimizer, hp, ema, resumed=False)
    saved = load_optimizer_state(model_dir) if resumable else None
    if saved is not None:
        if saved.get("names") != list(parameters):
            raise CorruptCheckpoint(f"{model_dir / OPTIMIZER_FILE}: parameter names do not match the model")
        optimizer.load_state_dict(saved["state"])
        for group in optimizer.param_groups:  # the manifest's hyperparameters win over the saved ones
            group.update(lr=hp.learning_rate, betas=hp.adam_betas, weight_decay=hp.weight_decay)
        policy.optimizer_steps, policy.resumed = int(prior.get("optimizerSteps", 0)), True
    return policy
