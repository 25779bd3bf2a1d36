"""The frozen bottom layers run once per sample (frozen_prefix.py): the logprobs and the gradients of the
trainable parameters equal the full forward's, over a right-padded batch and across passes."""

from types import SimpleNamespace

import torch

from engine_fixtures import make_tiny_model_dir
from longhaul_engine.checkpoint import load_model
from longhaul_engine.frozen_prefix import FrozenPrefix
from longhaul_engine.train import forward_logprobs


def _model(tmp_path, trainable):
    model = load_model(make_tiny_model_dir(tmp_path / "m", seed=3))
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(trainable(name))
    return model


def _mask(samples, width):
    """1 on each sample's own positions (the padding after them is never scored)."""
    mask = torch.zeros((len(samples), width))
    for i, s in enumerate(samples):
        mask[i, : len(s.token_ids)] = 1
    return mask


def _samples():
    generator = torch.Generator().manual_seed(7)
    lengths = [9, 5, 12]
    return [SimpleNamespace(token_ids=torch.randint(3, 200, (n,), generator=generator).tolist(), temperature=0.7) for n in lengths]


def test_logprobs_and_gradients_equal_the_full_forward(tmp_path):
    model = _model(tmp_path, lambda name: "layers.1." in name or name == "model.norm.weight")
    samples, keys = _samples(), [0, 1, 2]
    prefix = FrozenPrefix(model)
    assert prefix.depth == 1  # layer 0 holds no trainable parameter

    full, _ = forward_logprobs(model, samples, with_entropy=False)
    mask = _mask(samples, full.shape[1])
    (full * mask).sum().backward()
    full_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    model.zero_grad(set_to_none=True)

    with torch.no_grad():  # the proximal pass fills the cache
        first, _ = forward_logprobs(model, samples[:2], with_entropy=False, prefix=prefix, keys=keys[:2])
    assert len(prefix.cache) == 2
    split, _ = forward_logprobs(model, samples, with_entropy=False, prefix=prefix, keys=keys)
    (split * mask).sum().backward()
    assert len(prefix.cache) == 3

    assert torch.allclose(split * mask, full * mask, atol=1e-5), float(((split - full) * mask).abs().max())
    assert torch.allclose(
        first * _mask(samples[:2], first.shape[1]), full[:2, : first.shape[1]] * _mask(samples[:2], first.shape[1]), atol=1e-5
    )
    for name, grad in full_grads.items():
        parameter = dict(model.named_parameters())[name]
        assert torch.allclose(parameter.grad, grad, atol=1e-5), name
    frozen = [p for n, p in model.named_parameters() if not p.requires_grad]
    assert all(p.grad is None for p in frozen)


def test_depth_is_zero_when_the_first_layer_or_the_embeddings_train(tmp_path):
    assert FrozenPrefix(_model(tmp_path, lambda name: True)).depth == 0
    assert FrozenPrefix(_model(tmp_path / "e", lambda name: "embed_tokens" in name)).depth == 0
    assert FrozenPrefix(_model(tmp_path / "n", lambda name: name == "model.norm.weight")).depth == 2


def test_a_full_cache_recomputes_instead_of_growing(tmp_path):
    model = _model(tmp_path, lambda name: "layers.1." in name)
    samples = _samples()
    prefix = FrozenPrefix(model, cache_limit_bytes=1)
    with torch.no_grad():
        full, _ = forward_logprobs(model, samples, with_entropy=False)
        split, _ = forward_logprobs(model, samples, with_entropy=False, prefix=prefix, keys=[0, 1, 2])
    assert prefix.cache == {} and prefix.cache_bytes == 0
    mask = _mask(samples, full.shape[1])
    assert torch.allclose(split * mask, full * mask, atol=1e-5)


def test_scored_positions_equal_the_full_forward_there(tmp_path):
    """With `scored` the head runs only where a scored token is predicted; there logp, entropy and the
    gradients equal the full forward's, elsewhere logp and entropy are 0."""
    model = _model(tmp_path, lambda name: "layers.1." in name or name == "model.norm.weight")
    samples = _samples()
    scored = [[0] * 4 + [1] * (len(s.token_ids) - 4) for s in samples]
    scored[1][2] = 1
    for prefix in (None, FrozenPrefix(model)):
        keys = [0, 1, 2] if prefix else None
        full, full_entropy = forward_logprobs(model, samples, with_entropy=True)
        mask = torch.zeros_like(full)
        for i, row in enumerate(scored):
            mask[i, : len(row)] = torch.tensor(row, dtype=mask.dtype)
        (full * mask).sum().backward()
        full_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
        model.zero_grad(set_to_none=True)
        part, part_entropy = forward_logprobs(model, samples, with_entropy=True, prefix=prefix, keys=keys, scored=scored)
        part.sum().backward()
        assert torch.allclose(part, full * mask, atol=1e-5), float((part - full * mask).abs().max())
        assert torch.allclose(part_entropy, full_entropy * mask, atol=1e-5)
        for name, grad in full_grads.items():
            assert torch.allclose(dict(model.named_parameters())[name].grad, grad, atol=1e-5), name
        model.zero_grad(set_to_none=True)
