"""The trainer on a tiny random model: token samples from a real engine run, one DPPO step, checkpoint/resume."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from leaf_train.rl.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint  # noqa: E402
from leaf_train.rl.config import RLConfig  # noqa: E402
from leaf_train.rl.samples import TokenSample  # noqa: E402
from leaf_train.rl.trainer import Trainer, token_logprobs  # noqa: E402


def _model(path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path)


def _samples(model, n: int = 4) -> list[TokenSample]:
    """Episodes sampled from the model itself: behaviour logprobs are the model's own."""
    g = torch.Generator().manual_seed(1)
    out = []
    for i in range(n):
        prompt = torch.randint(3, 200, (6 + i,), generator=g).tolist()
        ids = torch.tensor([prompt])
        gen = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=5, min_new_tokens=5,
                             do_sample=True, output_logits=True, return_dict_in_generate=True, pad_token_id=0)
        sampled = gen.sequences[0, len(prompt):].tolist()
        lp = torch.log_softmax(torch.stack(gen.logits, 1)[0].float(), -1)
        behaviour = [float(lp[k, t]) for k, t in enumerate(sampled)]
        out.append(TokenSample(ids=prompt + sampled, loss_mask=[0] * len(prompt) + [1] * 5,
                               behaviour_logprobs=[0.0] * len(prompt) + behaviour, versions=[-1] * len(prompt) + [0] * 5,
                               reward=float(i % 2), task_id=f"t{i // 2}"))
    return out


def test_token_logprobs_match_generation(tiny_model_dir) -> None:
    model = _model(tiny_model_dir).eval()
    sample = _samples(model, 1)[0]
    with torch.no_grad():
        lp = token_logprobs(model, torch.tensor([sample.ids]), torch.ones(1, len(sample.ids), dtype=torch.long))
    got = [float(lp[0, t]) for t, m in enumerate(sample.loss_mask) if m]
    want = [b for b, m in zip(sample.behaviour_logprobs, sample.loss_mask) if m]
    assert got == pytest.approx(want, abs=1e-4)


@pytest.mark.parametrize("kind", ["dppo", "decoupled_ppo"])
def test_step_raises_logprob_of_rewarded_tokens(tiny_model_dir, kind: str) -> None:
    model = _model(tiny_model_dir)
    cfg = RLConfig.model_validate({"optim": {"lr": 1e-2, "micro_batch_size": 2}, "loss": {"kind": kind}})
    trainer = Trainer(cfg, model, torch.optim.AdamW(model.parameters(), lr=1e-2), pad_id=0)
    samples = _samples(model.eval())
    batch = torch.nn.utils.rnn.pad_sequence([torch.tensor(s.ids) for s in samples], batch_first=True)
    attn = torch.nn.utils.rnn.pad_sequence([torch.ones(len(s.ids), dtype=torch.long) for s in samples], batch_first=True)
    with torch.no_grad():
        before = token_logprobs(model, batch, attn)
    metrics = trainer.step(samples)
    with torch.no_grad():
        after = token_logprobs(model.eval(), batch, attn)
    assert trainer.version == 1
    assert metrics["zero_variance_groups"] == 0 and metrics["groups"] == 2
    assert metrics["tokens"] == 20.0 and metrics["grad_norm"] > 0
    for i, s in enumerate(samples):
        mask = torch.tensor(s.loss_mask, dtype=torch.bool)
        delta = (after[i, : len(s.ids)][mask] - before[i, : len(s.ids)][mask]).sum().item()
        assert (delta > 0) if s.reward == 1.0 else (delta < 0), (i, delta)


def test_flat_groups_give_no_update(tiny_model_dir) -> None:
    model = _model(tiny_model_dir)
    cfg = RLConfig()
    trainer = Trainer(cfg, model, torch.optim.AdamW(model.parameters(), lr=1e-2), pad_id=0)
    samples = _samples(model.eval())
    for s in samples:
        s.reward = 1.0
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    metrics = trainer.step(samples)
    assert metrics["zero_variance_groups"] == 2 and "loss" not in metrics
    assert all(torch.equal(weights[k], v) for k, v in model.state_dict().items())


def test_checkpoint_resume_restores_everything(tiny_model_dir, tmp_path) -> None:
    model = _model(tiny_model_dir)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    trainer = Trainer(RLConfig(), model, opt, pad_id=0)
    trainer.step(_samples(model.eval()))
    path = save_checkpoint(tmp_path, 1, model, opt, {"version": trainer.version, "next_group": 2})
    expected_draw = torch.rand(3)
    assert latest_checkpoint(tmp_path) == path
    fresh = _model(tiny_model_dir)
    fresh_opt = torch.optim.AdamW(fresh.parameters(), lr=1e-2)
    state = load_checkpoint(path, fresh, fresh_opt)
    assert state == {"step": 1, "version": 1, "next_group": 2}
    assert torch.equal(torch.rand(3), expected_draw)  # RNG restored to the moment of saving
    for (k, a), b in zip(model.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), k
    assert fresh_opt.state_dict()["state"][0]["step"] == opt.state_dict()["state"][0]["step"]


def test_lora_step_checkpoint_and_rollout_copy(tiny_model_dir, tmp_path) -> None:
    pytest.importorskip("peft")
    import copy

    from leaf_cli.llm.transformers_engine import TransformersEngine
    from leaf_train.rl.config import ModelConfig
    from leaf_train.rl.model import load_policy, rollout_state

    cfg = ModelConfig(path=str(tiny_model_dir), lora={"r": 4, "alpha": 8})
    model, tokenizer = load_policy(cfg, tiny_model_dir)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    engine = TransformersEngine(copy.deepcopy(model).eval(), tokenizer)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    trainer = Trainer(RLConfig(), model, opt, pad_id=0)
    trainer.step(_samples(model.eval()))
    state = rollout_state(model)
    assert state and all("lora_" in k for k in state)
    engine.load_weights(state, trainer.version)
    for k, v in engine.model.state_dict().items():
        assert torch.equal(v, model.state_dict()[k]), k
    path = save_checkpoint(tmp_path, 1, model, opt, {"version": 1})
    assert (path / "model" / "adapter_model.safetensors").is_file()
    fresh, _ = load_policy(cfg, tiny_model_dir)
    load_checkpoint(path, fresh, torch.optim.AdamW([p for p in fresh.parameters() if p.requires_grad], lr=1e-2))
    for k, v in model.state_dict().items():
        assert torch.equal(v, fresh.state_dict()[k]), k
