from longhaul_engine.info import engine_info


def test_engine_reports_the_pinned_cpu_torch():
    info = engine_info()
    assert info["torch"].startswith("2.13.0"), info
    assert info["threads"] >= 1


def test_a_tiny_forward_and_backward_pass_produces_gradients():
    import torch

    layer = torch.nn.Linear(4, 2)
    loss = layer(torch.ones(3, 4)).pow(2).mean()
    loss.backward()
    assert layer.weight.grad is not None
    assert layer.weight.grad.shape == (2, 4)
