"""leaf's DPPO loss against verl's own `dppo_tv` / `dppo_kl` (verl 0.9.1, `verl/trainer/ppo/core_algos.py`,
its policy-loss registry), installed from PyPI into the parity cache (tests/tasks/official) and imported as
verl ships it: `core_algos` and the verl modules it imports run unchanged (`verl.utils.torch_functional`
for `masked_mean` / `masked_sum`, `verl.utils.groupwise`, `verl.utils.import_utils`, `verl.plugin.platform`),
with omegaconf 2.3.0 beside them. Stood in, because their imports would pull verl's whole framework and no
compared line reads them: verl's package `__init__`s (empty namespaces), `tensordict` (a type annotation
in torch_functional), and `verl.trainer.config` / `verl.workers.config`, whose `AlgoConfig` / `ActorConfig`
are only named in an isinstance check and an annotation — the config passed is an OmegaConf `DictConfig`,
a type verl's loss functions accept.

The per-token mask is read from verl's own computation, not restated: the gradient of verl's loss with
respect to the current log-probabilities is −A·sg(min(ρ, C))·M/|T| per token, non-zero exactly where verl's
mask M keeps the token (A ≠ 0, ρ > 0). Any token whose keep/drop differs fails the test, and so does a loss
(or a per-token gradient) more than 1e-6 apart, relative.
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")  # verl's torch_functional imports it at module level

from leaf_train.rl import losses  # noqa: E402
from tests.tasks.official import site  # noqa: E402

RTOL = 1e-6
VERL_PACKAGES = ("verl", "verl.trainer", "verl.trainer.ppo", "verl.utils", "verl.plugin", "verl.workers")
CASES = 60


@pytest.fixture(scope="module")
def verl_losses():
    """verl's registered `dppo_tv` and `dppo_kl`, and OmegaConf to build the config they read."""
    root = site("verl-0.9.1")
    saved = {k: v for k, v in sys.modules.items() if k == "verl" or k.startswith(("verl.", "omegaconf", "tensordict"))}
    for key in saved:
        del sys.modules[key]
    sys.path.insert(0, str(root))
    try:
        for name in VERL_PACKAGES:  # namespaces: their __init__ would import ray, transformers models, ...
            package = types.ModuleType(name)
            package.__path__ = [str(root.joinpath(*name.split(".")))]
            sys.modules[name] = package
        if importlib.util.find_spec("tensordict") is None:
            sys.modules["tensordict"] = types.SimpleNamespace(TensorDict=dict)  # type: ignore[assignment]
        for name, attr in (("verl.trainer.config", "AlgoConfig"), ("verl.workers.config", "ActorConfig")):
            sys.modules[name] = types.SimpleNamespace(**{attr: type(attr, (), {})})  # type: ignore[assignment]
        groupwise = importlib.import_module("verl.utils.groupwise")
        utils = sys.modules["verl.utils"]
        utils.as_torch_index, utils.group_mean_std = groupwise.as_torch_index, groupwise.group_mean_std
        core_algos = importlib.import_module("verl.trainer.ppo.core_algos")
        omegaconf = importlib.import_module("omegaconf")
    finally:
        sys.path.remove(str(root))
    assert Path(core_algos.__file__).is_relative_to(root)
    fns = {name: core_algos.get_policy_loss_fn(f"dppo_{name}") for name in ("tv", "kl")}
    yield fns, omegaconf.OmegaConf
    for key in [k for k in sys.modules if k == "verl" or k.startswith(("verl.", "omegaconf", "tensordict"))]:
        del sys.modules[key]
    sys.modules.update(saved)


def _case(seed: int, near_one: bool) -> tuple[torch.Tensor, ...]:
    """(current log-probs, behaviour log-probs, advantages, response mask); `near_one`: log-probs within
    1e-7 of 0, probabilities that are 1.0 in float32, beside ordinary ones."""
    g = torch.Generator().manual_seed(seed)
    shape = (4, 16)
    if near_one:
        lp = -torch.rand(shape, generator=g) * 1e-7
        lm = torch.where(torch.rand(shape, generator=g) < 0.5, -torch.rand(shape, generator=g) * 1e-7,
                         torch.log(torch.rand(shape, generator=g).clamp(0.05, 0.95)))
        lp, lm = (lp, lm) if seed % 2 else (lm, lp)
    else:
        lp = torch.log(torch.rand(shape, generator=g).clamp(1e-4, 1 - 1e-4))
        lm = torch.log(torch.rand(shape, generator=g).clamp(1e-4, 1 - 1e-4))
    adv = torch.randn(shape[0], 1, generator=g).expand(shape).clone()
    adv[0, :4] = 0.0  # zero-advantage tokens, as a flat group gives: no gradient in either
    mask = (torch.rand(shape, generator=g) > 0.2).float()
    return lp, lm, adv, mask


def _loss_and_grad(fn, lp: torch.Tensor) -> tuple[float, torch.Tensor]:
    current = lp.clone().requires_grad_(True)
    loss = fn(current)
    loss.backward()
    return float(loss.detach()), current.grad


def _close(ours: torch.Tensor | float, theirs: torch.Tensor | float) -> bool:
    ours, theirs = torch.as_tensor(ours, dtype=torch.float64), torch.as_tensor(theirs, dtype=torch.float64)
    scale = theirs.abs().max().clamp(min=1e-12)
    return bool(((ours - theirs).abs() <= RTOL * scale).all())


@pytest.mark.parametrize("near_one", [False, True], ids=["random", "probabilities-1.0-in-float32"])
@pytest.mark.parametrize("divergence, delta", [("tv", 0.15), ("kl", 0.05)])
def test_dppo_matches_verls_own_loss_token_for_token(verl_losses, divergence: str, delta: float, near_one: bool) -> None:
    fns, omegaconf = verl_losses
    config = omegaconf.create({"clip_ratio": delta, "clip_ratio_low": None, "clip_ratio_high": None,
                               "clip_ratio_c": 20.0, "global_batch_info": {}})
    compared = dropped = 0
    for seed in range(CASES):
        lp, lm, adv, mask = _case(seed, near_one)
        ours, our_grad = _loss_and_grad(lambda cur: losses.dppo_loss(
            cur, lm, adv, mask, divergence=divergence, delta_low=delta, delta_high=delta, is_cap=20.0)[0], lp)
        theirs, their_grad = _loss_and_grad(lambda cur: fns[divergence](lm, cur, adv, mask, "token-mean", config)[0], lp)
        on = mask.bool() & (adv != 0)
        keep = losses.trust_region_keep(lp, lm, adv, divergence=divergence, delta_low=delta, delta_high=delta)
        verl_keep = their_grad != 0  # verl's own mask, as its gradient carries it
        flips = (on & (keep != verl_keep)).nonzero().tolist()
        assert not flips, f"seed {seed}: mask differs from verl's at {flips}"
        assert _close(ours, theirs), (seed, ours, theirs)
        assert _close(our_grad, their_grad), seed
        compared += int(on.sum())
        dropped += int((on & ~verl_keep).sum())
    assert dropped >= 10 and compared - dropped >= 10, (dropped, compared)  # both sides of the mask were hit
