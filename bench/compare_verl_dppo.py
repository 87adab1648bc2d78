"""Leaf's DPPO loss against verl's `dppo_tv` / `dppo_kl` (verl/trainer/ppo/core_algos.py), read from a verl
wheel at run time (`pip download --no-deps verl`; nothing of verl is vendored here).

verl's module imports its whole framework, so only the two functions' source is taken (ast) and run with
the two helpers they call, defined here by their documented meaning: `masked_mean` and `agg_loss` in
"token-mean" mode (Σ loss·mask / Σ mask). Cases: random batches, plus tokens whose probabilities round to
1.0 in float32. Prints, per divergence, how many token masks agree and the largest loss difference.

    python bench/compare_verl_dppo.py --verl-wheel /tmp/verl-0.9.1-py3-none-any.whl [--cases 200]
"""

from __future__ import annotations

import argparse
import ast
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training"))
from leaf_train.rl import losses  # noqa: E402


def _verl_functions(wheel: Path) -> dict:
    source = zipfile.ZipFile(wheel).read("verl/trainer/ppo/core_algos.py").decode()
    tree = ast.parse(source)
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef)
            and n.name in ("compute_policy_loss_dppo_tv", "compute_policy_loss_dppo_kl")]
    for fn in keep:
        fn.decorator_list = []
    module = ast.Module(body=keep, type_ignores=[])

    def masked_mean(x, mask):  # noqa: ANN001, ANN202
        return (x * mask).sum() / mask.sum().clamp(min=1)

    def agg_loss(loss_mat, loss_mask, loss_agg_mode, **_):  # noqa: ANN001, ANN202
        assert loss_agg_mode == "token-mean"
        return (loss_mat * loss_mask).sum() / loss_mask.sum().clamp(min=1)

    scope = {"torch": torch, "Any": object, "Optional": lambda x: x, "ActorConfig": object, "AlgoConfig": type("A", (), {}),
             "verl_F": SimpleNamespace(masked_mean=masked_mean), "agg_loss": agg_loss}
    exec(compile(module, "verl_core_algos", "exec"), scope)  # noqa: S102 - the reference, run for comparison
    return {"tv": scope["compute_policy_loss_dppo_tv"], "kl": scope["compute_policy_loss_dppo_kl"]}


class _Config(dict):
    def __init__(self, delta: float, cap: float) -> None:
        super().__init__(clip_ratio_c=cap)
        self.clip_ratio, self.clip_ratio_low, self.clip_ratio_high, self.global_batch_info = delta, None, None, {}


def _case(seed: int, near_one: bool) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    shape = (4, 16)
    if near_one:  # log-probs within 1e-7 of 0: probabilities that are 1.0 in float32
        lp = -torch.rand(shape, generator=g) * 1e-7
        lm = torch.where(torch.rand(shape, generator=g) < 0.5, -torch.rand(shape, generator=g) * 1e-7,
                         torch.log(torch.rand(shape, generator=g).clamp(0.05, 0.95)))
        lp, lm = (lp, lm) if seed % 2 else (lm, lp)
    else:
        lp = torch.log(torch.rand(shape, generator=g).clamp(1e-4, 1 - 1e-4))
        lm = torch.log(torch.rand(shape, generator=g).clamp(1e-4, 1 - 1e-4))
    adv = torch.randn(shape[0], 1, generator=g).expand(shape).clone()
    mask = (torch.rand(shape, generator=g) > 0.2).float()
    return lp, lm, adv, mask


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--verl-wheel", type=Path, required=True)
    parser.add_argument("--cases", type=int, default=200)
    args = parser.parse_args()
    verl = _verl_functions(args.verl_wheel)
    for divergence, delta in (("tv", 0.15), ("kl", 0.05)):
        for near_one in (False, True):
            agree = total = 0
            worst = 0.0
            for seed in range(args.cases):
                lp, lm, adv, mask = _case(seed, near_one)
                ours, _ = losses.dppo_loss(lp, lm, adv, mask, divergence=divergence, delta_low=delta,
                                           delta_high=delta, is_cap=20.0)
                theirs, _ = verl[divergence](lm, lp, adv, mask, "token-mean", _Config(delta, 20.0))
                keep = losses.trust_region_keep(lp, lm, adv, divergence=divergence, delta_low=delta, delta_high=delta)
                # verl's own mask, recomputed from its rule (A = 0 tokens carry no gradient either way)
                p, q = lp.exp(), lm.exp()
                if divergence == "tv":
                    valid = torch.where(adv > 0, (p - q) <= delta, (p - q) >= -delta)
                else:
                    bkl = q * (lm - lp) + (1 - q) * torch.log((1.0 - q + 1e-8) / (1.0 - p + 1e-8))
                    valid = torch.where(adv > 0, (bkl <= delta) | (p <= q), (bkl <= delta) | (p >= q))
                on = mask.bool() & (adv != 0)
                agree += int((keep[on] == valid[on]).sum())
                total += int(on.sum())
                worst = max(worst, abs(float(ours) - float(theirs)))
            label = "probabilities ≈ 1.0 in float32" if near_one else "random"
            print(f"{divergence} ({label}): masks agree on {agree}/{total} tokens; max |loss diff| {worst:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
