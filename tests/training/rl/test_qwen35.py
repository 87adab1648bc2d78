"""RL on Leaf's real architecture: the tiny random-weight Qwen3.5 checkpoint (tests/conftest.py, the layout of
microsoft/FrogNano-4B-2609: `Qwen3_5ForConditionalGeneration`, 3 Gated DeltaNet + 1 gated attention layers,
Qwen3.5's 248,320-token vocabulary, the real chat template). The policy and the rollout engine load the
Hugging Face checkpoint; a qwen35 GGUF is refused as a training source; the engine's behaviour log-probs
stay exact across turns with the hybrid cache kept; one DPPO step trains it."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from leaf_cli.errors import LeafError  # noqa: E402
from leaf_cli.llm.engine import Sampling  # noqa: E402
from leaf_cli.llm.messages import Conversation, Message  # noqa: E402
from leaf_cli.llm.transformers_engine import TransformersEngine  # noqa: E402
from leaf_train.rl.config import ModelConfig, RLConfig  # noqa: E402
from leaf_train.rl.model import load_policy, resolve_checkpoint  # noqa: E402
from leaf_train.rl.samples import sample_from_trajectory  # noqa: E402
from leaf_train.rl.trainer import Trainer, token_logprobs  # noqa: E402

pytestmark = pytest.mark.llama
SAMPLING = Sampling(temperature=1.0, top_p=1.0, top_k=0, max_tokens=6, enable_thinking=False, seed=11)


def test_the_policy_is_the_text_model_of_the_hf_checkpoint(tiny_qwen35_hf: Path) -> None:
    from transformers import AutoModelForImageTextToText

    model, tokenizer = load_policy(ModelConfig(path=str(tiny_qwen35_hf), dtype="float32"),
                                   resolve_checkpoint(ModelConfig(path=str(tiny_qwen35_hf))))
    assert type(model).__name__ == "Qwen3_5ForCausalLM"
    assert model.config.layer_types == ["linear_attention"] * 3 + ["full_attention"]
    full = AutoModelForImageTextToText.from_pretrained(tiny_qwen35_hf, dtype=torch.float32).eval()
    ids = torch.tensor([tokenizer("def add(a, b): return a + b").input_ids])
    with torch.no_grad():
        torch.testing.assert_close(model.eval()(input_ids=ids).logits, full(input_ids=ids).logits, rtol=1e-4, atol=1e-4)


def test_a_qwen35_gguf_is_never_the_training_source(tiny_qwen35_gguf: Path) -> None:
    with pytest.raises(LeafError, match="model.path"):
        resolve_checkpoint(ModelConfig(gguf_file=str(tiny_qwen35_gguf)))


def test_sliced_logprobs_equal_the_full_ones(tiny_qwen35_hf: Path) -> None:
    model, tokenizer = load_policy(ModelConfig(path=str(tiny_qwen35_hf), dtype="float32"), tiny_qwen35_hf)
    ids = torch.tensor([tokenizer("x = [1, 2, 3]\nprint(sum(x))\n" * 3).input_ids])
    mask = torch.ones_like(ids)
    full = token_logprobs(model, ids, mask, 0.7, limit=10 ** 12)
    sliced = token_logprobs(model, ids, mask, 0.7, chunk=5, limit=0)
    torch.testing.assert_close(sliced, full, rtol=1e-5, atol=1e-5)
    sliced.sum().backward()  # gradients flow through the checkpointed slices
    assert model.get_output_embeddings().weight.grad.abs().sum() > 0


def _engine(path: Path) -> TransformersEngine:
    return TransformersEngine.load(path, context_limit=4096)


def test_engine_logprobs_are_exact_across_turns_with_the_hybrid_cache(tiny_qwen35_hf: Path) -> None:
    """Two turns within one user turn (a tool result between them; re-rendering at a new user message is
    engineer 12b's), the second reusing the conversation's cache (recurrent DeltaNet state + attention KV):
    the recorded behaviour log-probs equal a fresh full-sequence forward. The checkpoint's generation_config says
    top_k 20, top_p 0.95, T 0.6: they must not leak into a top_k 0 / top_p 1 / T 1 request."""
    engine = _engine(tiny_qwen35_hf)
    assert engine.model.generation_config.top_k == 20
    conv = Conversation(messages=[Message(role="system", content="sys"), Message(role="user", content="hi")])
    first = engine.complete(conv, [], SAMPLING)
    conv.append(first.to_message())
    conv.append(Message(role="tool", content="Wrote a.txt (1 bytes).", name="Write"))
    second = engine.complete(conv, [], SAMPLING)
    assert second.usage.cached_tokens > 0  # the cache was reused
    log = conv.token_log
    with torch.no_grad():
        lp = token_logprobs(engine.model, torch.tensor([log.ids]), torch.ones(1, len(log.ids), dtype=torch.long))[0]
    got = [b for b, m in zip(log.logprobs, log.mask) if m]
    want = [float(lp[t]) for t, m in enumerate(log.mask) if m]
    assert got == pytest.approx(want, abs=2e-3)


@pytest.mark.slow
def test_one_dppo_step_on_qwen35(tiny_qwen35_hf: Path, tmp_path: Path) -> None:
    from leaf_cli.agent import Limits, run_episode
    from leaf_cli.tools import Workspace

    cfg = RLConfig.model_validate({"optim": {"lr": 1e-3, "micro_batch_size": 2},
                                   "rollout": {"temperature": 1.0, "top_k": 0, "top_p": 1.0}})
    model, tokenizer = load_policy(ModelConfig(path=str(tiny_qwen35_hf), dtype="float32"), tiny_qwen35_hf)
    engine = TransformersEngine(copy.deepcopy(model).eval(), tokenizer, context_limit=4096)
    samples = []
    for i in range(2):
        ws = tmp_path / f"ws{i}"
        ws.mkdir()
        traj = run_episode("Say hello.", engine, Workspace(root=ws), sampling=SAMPLING.model_copy(update={"seed": i}),
                           limits=Limits(max_turns=1))
        samples.append(sample_from_trajectory(traj, float(i), "t"))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    metrics = Trainer(cfg, model, torch.optim.AdamW(model.parameters(), lr=1e-3), pad_id=tokenizer.pad_token_id or 0
                      ).step(samples)
    assert metrics["ratio_mean"] == pytest.approx(1.0, abs=1e-3) and metrics["grad_norm"] > 0
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_a_qwen35_checkpoint_resumes(tiny_qwen35_hf: Path, tmp_path: Path) -> None:
    """save_pretrained writes Qwen3_5ForCausalLM under the published names (model.language_model.*); resume
    must still restore every weight."""
    from leaf_train.rl.checkpoint import load_checkpoint, save_checkpoint

    model, _ = load_policy(ModelConfig(path=str(tiny_qwen35_hf), dtype="float32"), tiny_qwen35_hf)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with torch.no_grad():
        model.model.norm.weight.add_(0.5)  # a state the base checkpoint does not have
    path = save_checkpoint(tmp_path, 1, model, opt, {"version": 1})
    fresh, _ = load_policy(ModelConfig(path=str(tiny_qwen35_hf), dtype="float32"), tiny_qwen35_hf)
    load_checkpoint(path, fresh, torch.optim.AdamW(fresh.parameters(), lr=1e-3))
    for (k, a), b in zip(model.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), k
