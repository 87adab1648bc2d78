"""DPPO on a CUDA device: the trust-region mask, the loss and its gradient there equal the CPU's on the same
tokens (the GPU configs, rl-gpu-fsdp.yaml, train through this loss). Marked `gpu`: skipped, tagged
[no-gpu], where torch sees no CUDA device (tests/support/skips.py)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from leaf_train.rl import losses  # noqa: E402

pytestmark = pytest.mark.gpu


def _batch(seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    shape = (8, 64)
    lp = torch.log(torch.rand(shape, generator=g).clamp(1e-4, 1 - 1e-4))
    lm = torch.log(torch.rand(shape, generator=g).clamp(1e-4, 1 - 1e-4))
    adv = torch.randn(shape[0], 1, generator=g).expand(shape).clone()
    mask = (torch.rand(shape, generator=g) > 0.2).float()
    return lp, lm, adv, mask


def _on(device: str, divergence: str, batch: tuple[torch.Tensor, ...]) -> tuple[float, torch.Tensor, torch.Tensor]:
    lp, lm, adv, mask = (t.to(device) for t in batch)
    current = lp.clone().requires_grad_(True)
    loss, _ = losses.dppo_loss(current, lm, adv, mask, divergence=divergence, delta_low=0.1, delta_high=0.1, is_cap=20.0)
    loss.backward()
    keep = losses.trust_region_keep(lp, lm, adv, divergence=divergence, delta_low=0.1, delta_high=0.1)
    return float(loss.detach()), current.grad.cpu(), keep.cpu()


@pytest.mark.parametrize("divergence", ["tv", "kl"])
def test_dppo_on_cuda_equals_the_cpu(divergence: str) -> None:
    for seed in range(5):
        batch = _batch(seed)
        (cpu_loss, cpu_grad, cpu_keep), (gpu_loss, gpu_grad, gpu_keep) = (_on(d, divergence, batch) for d in ("cpu", "cuda"))
        assert torch.equal(cpu_keep, gpu_keep) and not bool(cpu_keep.all()), seed  # some tokens dropped, the same ones
        assert abs(cpu_loss - gpu_loss) <= 1e-5 * abs(cpu_loss), (seed, cpu_loss, gpu_loss)
        assert torch.allclose(cpu_grad, gpu_grad, rtol=1e-5, atol=1e-9), seed
