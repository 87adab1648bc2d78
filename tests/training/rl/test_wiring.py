"""Wiring, not the pure losses: rollouts through GroupRunner and the transformers engine into the Trainer,
on a tiny random model and the real toy environment (git repositories, leaf's grader). Each test fails on
one mutation of the wiring the issue names:
  - sampling at one temperature and scoring at another  → ratio_mean ≠ 1 at version 0;
  - staleness always 0 (engine version tags or trainer)  → the stale mask drops nothing;
  - dropping the micro-batch token-share weighting       → micro-batch size changes the update;
  - |T| without zero-advantage episodes / per rank       → the update's size changes with them;
  - the engine ignoring temperature                      → test_sampler.py (recorded ≠ sampled ≠ requested).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from leaf_cli.llm.transformers_engine import TransformersEngine, tokenizer_renderer  # noqa: E402
from leaf_cli.tasks import make_sandbox  # noqa: E402
from leaf_train.rl.config import RLConfig  # noqa: E402
from leaf_train.rl.model import rollout_state  # noqa: E402
from leaf_train.rl.rollout import GroupRunner  # noqa: E402
from leaf_train.rl.samples import TokenSample  # noqa: E402
from leaf_train.rl.toy_env import ToyEnvironment  # noqa: E402
from leaf_train.rl.trainer import Trainer  # noqa: E402


def _model(path: Path):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(path)
    with torch.no_grad():
        model.model.norm.weight.mul_(4.0)  # logits with spread, so a wrong temperature shows in ρ
    return model


@pytest.fixture(scope="module")
def rolled(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[TokenSample]:
    """Two groups of two episodes, sampled by the engine tagged as policy version 3 (run once per module)."""
    _, samples = _rollouts(tiny_model_dir, tmp_path_factory.mktemp("wiring"), _cfg(), engine_version=3)
    return samples


def _samples(rolled: list[TokenSample]) -> list[TokenSample]:
    return [copy.deepcopy(s) for s in rolled]


def _ragged(samples: list[TokenSample]) -> list[TokenSample]:
    """Sample k cut k tokens short (a prefix of an episode is still exactly what was sampled)."""
    out = []
    for k, s in enumerate(samples):
        n = len(s.ids) - k
        out.append(TokenSample(ids=s.ids[:n], loss_mask=s.loss_mask[:n], behaviour_logprobs=s.behaviour_logprobs[:n],
                               versions=s.versions[:n], reward=s.reward, task_id=s.task_id))
    return out


def _rollouts(tiny_model_dir: Path, tmp_path: Path, cfg: RLConfig, engine_version: int = 0):
    from transformers import AutoTokenizer

    model = _model(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    engine = TransformersEngine(copy.deepcopy(model).eval(), tokenizer, context_limit=1024,
                                render=tokenizer_renderer(tokenizer))
    engine.load_weights(rollout_state(model), engine_version)
    env = ToyEnvironment(tmp_path / "env", cfg.env, cfg.seed, make_sandbox("subprocess"))
    runner = GroupRunner(engine, cfg.rollout, env)
    torch.manual_seed(5)
    samples = runner.run_group(0) + runner.run_group(1)
    for i, s in enumerate(samples):  # the random model solves nothing: give each group a spread of outcomes
        s.reward = float(i % 2)
    return model, samples


def _cfg(**loss) -> RLConfig:
    return RLConfig.model_validate({
        "optim": {"lr": 1e-6, "micro_batch_size": 2, "grad_clip": 0.0},
        "loss": {"delta_low": 10.0, "delta_high": 10.0, **loss},
        "rollout": {"group_size": 2, "groups_per_step": 2, "temperature": 0.6, "top_k": 0, "top_p": 1.0,
                    "max_tokens": 12, "max_turns": 1, "template": "tokenizer"},
        "env": {"num_tasks": 2, "hint": False},
    })


def test_on_policy_ratio_is_one_through_the_real_rollout_path(tiny_model_dir: Path, rolled) -> None:
    cfg = _cfg(stale={"enabled": False})
    model, samples = _model(tiny_model_dir), _samples(rolled)
    assert all(s.length > 0 for s in samples)
    trainer = Trainer(cfg, model, torch.optim.SGD(model.parameters(), lr=1e-6), pad_id=0)
    metrics = trainer.step(samples)
    assert metrics["ratio_mean"] == pytest.approx(1.0, abs=1e-4)  # sampled at T = 0.6, scored at T = 0.6
    assert metrics["masked_pos"] == metrics["masked_neg"] == 0.0
    # The same samples scored at another temperature are visibly off-policy: what the test guards against.
    other = cfg.model_copy(update={"rollout": cfg.rollout.model_copy(update={"temperature": 1.0})})
    off = Trainer(other, model, torch.optim.SGD(model.parameters(), lr=0.0), pad_id=0).step(samples)
    assert abs(off["ratio_mean"] - 1.0) > 0.05


def test_staleness_reaches_the_stale_mask(tiny_model_dir: Path, rolled) -> None:
    """Tokens sampled by policy version 3 and trained at version 5 are 2 versions stale: the stale mask
    (on the age itself here, so the test does not depend on how far π moved) drops their A ≤ 0 tokens."""
    cfg = _cfg(stale={"enabled": True, "min_staleness": 1, "divergence": "staleness", "threshold": 1.5})
    model, samples = _model(tiny_model_dir), _samples(rolled)
    assert {v for s in samples for v, m in zip(s.versions, s.loss_mask) if m} == {3}
    trainer = Trainer(cfg, model, torch.optim.SGD(model.parameters(), lr=1e-6), pad_id=0)
    trainer.version = 5
    metrics = trainer.step(samples)
    assert metrics["staleness_max"] == 2
    negative = sum(s.length for s in samples if s.reward == 0.0) / sum(s.length for s in samples)
    assert metrics["stale_dropped"] == pytest.approx(negative, abs=1e-6)
    assert metrics["masked_neg"] == pytest.approx(1.0)


def _delta(cfg: RLConfig, tiny_model_dir: Path, samples: list[TokenSample], accelerator=None) -> torch.Tensor:
    """The parameter change of one SGD(lr = 1) step: minus the gradient of the step's loss."""
    model = _model(tiny_model_dir)
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    Trainer(cfg, model, torch.optim.SGD(model.parameters(), lr=1.0), pad_id=0, accelerator=accelerator).step(samples)
    return torch.cat([p.detach().flatten() for p in model.parameters()]) - before


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    """Equal up to float32 noise from padding differences (1e-3 of the largest change); every mutation the
    tests guard against changes the update by tens of percent."""
    scale = float(want.abs().max())
    assert scale > 0
    torch.testing.assert_close(got, want, rtol=0.0, atol=1e-3 * scale)


def _sgd(**optim) -> RLConfig:
    cfg = _cfg(stale={"enabled": False})
    return cfg.model_copy(update={"optim": cfg.optim.model_copy(update={"grad_clip": 0.0, **optim})})


def test_micro_batch_size_does_not_change_the_update(tiny_model_dir: Path, rolled) -> None:
    samples = _ragged(_samples(rolled))
    assert len({s.length for s in samples}) == len(samples)
    whole = _delta(_sgd(micro_batch_size=len(samples)), tiny_model_dir, samples)
    single = _delta(_sgd(micro_batch_size=1), tiny_model_dir, samples)
    assert whole.abs().max() > 0
    _close(single, whole)


def test_zero_advantage_episodes_count_in_the_token_mean(tiny_model_dir: Path, rolled) -> None:
    """|T| is every trainable token of the step: adding a flat group (all rewards equal) leaves the
    gradient's direction and scales it by |T_live| / |T_all|, as in the paper and verl."""
    samples = _ragged(_samples(rolled))
    live = samples[:2]
    flat = [copy.deepcopy(s) for s in samples[2:]]
    for s in flat:
        s.reward, s.task_id = 1.0, "flat"
    t_live, t_flat = sum(s.length for s in live), sum(s.length for s in flat)
    alone = _delta(_sgd(), tiny_model_dir, live)
    together = _delta(_sgd(), tiny_model_dir, live + flat)
    _close(together, alone * (t_live / (t_live + t_flat)))


class _TwoRanks:
    """Stands in for accelerate on one rank of two data-parallel ranks (no second process can run a
    collective here): `reduce` adds the other rank's token count; backward and clipping are torch's own.
    The data-parallel gradient average is then taken by the test, as DDP/FSDP would."""

    num_processes = 2

    def __init__(self, other_tokens: float) -> None:
        self.other = other_tokens

    def reduce(self, tensor: torch.Tensor, reduction: str = "sum") -> torch.Tensor:
        assert reduction == "sum"
        return tensor + self.other

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    def clip_grad_norm_(self, params, limit: float) -> torch.Tensor:
        return torch.nn.utils.clip_grad_norm_(params, limit)


def test_the_token_mean_is_global_across_ranks(tiny_model_dir: Path, rolled) -> None:
    samples = _ragged(_samples(rolled))
    rank0, rank1 = samples[:2], samples[2:]  # one group per rank, different token counts
    t0, t1 = sum(s.length for s in rank0), sum(s.length for s in rank1)
    assert t0 != t1
    d0 = _delta(_sgd(), tiny_model_dir, rank0, _TwoRanks(t1))
    d1 = _delta(_sgd(), tiny_model_dir, rank1, _TwoRanks(t0))
    single = _delta(_sgd(), tiny_model_dir, samples)
    _close((d0 + d1) / 2, single)
