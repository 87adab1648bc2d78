"""The transformers engine: an append-only token log, behaviour logprobs equal to the model's own, KV reuse,
batched sampling, and a real episode on a real git repository (tiny random model; SmolLM2 in the slow test)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from leaf_cli.llm.engine import Sampling  # noqa: E402
from leaf_cli.llm.messages import Conversation, Message  # noqa: E402
from leaf_cli.llm.transformers_engine import TransformersEngine, tokenizer_renderer  # noqa: E402
from leaf_train.rl.trainer import token_logprobs  # noqa: E402

SAMPLING = Sampling(temperature=1.0, top_p=1.0, top_k=0, max_tokens=8, enable_thinking=False, seed=3)


def _engine(path: Path, **kwargs) -> TransformersEngine:
    engine = TransformersEngine.load(path, context_limit=1024, **kwargs)
    return engine


def _recomputed(engine: TransformersEngine, ids: list[int]) -> list[float]:
    with torch.no_grad():
        lp = token_logprobs(engine.model, torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.long))
    return lp[0].tolist()


def _two_turns(engine: TransformersEngine) -> tuple[Conversation, list, list]:
    conv = Conversation(messages=[Message(role="system", content="sys"), Message(role="user", content="do it")])
    first = engine.complete(conv, [], SAMPLING)
    after_first = list(conv.token_log.ids)
    conv.append(first.to_message())
    conv.append(Message(role="user", content="next"))
    second = engine.complete(conv, [], SAMPLING)
    return conv, [first, second], after_first


@pytest.mark.parametrize("renderer", ["leaf", "tokenizer"])
def test_token_log_is_append_only_and_exact(tiny_model_dir: Path, renderer: str) -> None:
    engine = _engine(tiny_model_dir)
    if renderer == "tokenizer":
        engine.render = tokenizer_renderer(engine.tokenizer)
    conv, (first, second), after_first = _two_turns(engine)
    log = conv.token_log
    assert log.ids[: len(after_first)] == after_first  # turn 2 only appended
    assert after_first[-len(first.token_ids):] == first.token_ids  # sampled ids kept as sampled
    assert log.ids[-len(second.token_ids):] == second.token_ids
    assert sum(log.mask) == len(first.token_ids) + len(second.token_ids)
    # the first prompt is exactly the rendered conversation, tokenized once
    prompt = engine.render(conv.messages[:2], [], True, False)
    assert log.ids[: first.usage.prompt_tokens] == engine._encode(prompt)
    # the tail after a reply: what the template puts after it, then the next user turn and generation prompt
    tail = log.ids[len(after_first): len(log.ids) - len(second.token_ids)]
    text = engine.tokenizer.decode(tail)
    assert text.endswith("next<|im_end|>\n<|im_start|>assistant\n")
    assert second.usage.cached_tokens == len(after_first) - 1  # KV reused: only the tail was evaluated


def test_behaviour_logprobs_are_the_models_own(tiny_model_dir: Path) -> None:
    engine = _engine(tiny_model_dir)
    conv, _, _ = _two_turns(engine)  # turn 2 samples on top of the reused KV cache
    log = conv.token_log
    recomputed = _recomputed(engine, log.ids)
    for i, m in enumerate(log.mask):
        if m:
            assert log.logprobs[i] == pytest.approx(recomputed[i], abs=2e-4)
            assert log.versions[i] == 0


def test_batched_sampling_matches_single_rows(tiny_model_dir: Path) -> None:
    engine = _engine(tiny_model_dir, max_batch=3, batch_wait=2.0)
    engine.policy_version = 7
    convs = [Conversation(messages=[Message(role="system", content="s"), Message(role="user", content="x" * (i + 1))])
             for i in range(3)]  # different prompt lengths: left padding must not leak into the logprobs
    sampling = SAMPLING.model_copy(update={"seed": None})
    threads = [threading.Thread(target=engine.complete, args=(c, [], sampling)) for c in convs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for conv in convs:
        log = conv.token_log
        recomputed = _recomputed(engine, log.ids)
        sampled = [i for i, m in enumerate(log.mask) if m]
        assert sampled and all(log.versions[i] == 7 for i in sampled)
        assert [log.logprobs[i] for i in sampled] == pytest.approx([recomputed[i] for i in sampled], abs=2e-4)


def test_weight_update_bumps_the_version_and_drops_stale_kv(tiny_model_dir: Path) -> None:
    engine = _engine(tiny_model_dir)
    conv = Conversation(messages=[Message(role="system", content="s"), Message(role="user", content="u")])
    first = engine.complete(conv, [], SAMPLING)
    state = {k: v + 0.01 for k, v in engine.model.state_dict().items()}
    engine.load_weights(state, version=1)
    conv.append(first.to_message())
    conv.append(Message(role="user", content="again"))
    second = engine.complete(conv, [], SAMPLING)
    assert second.usage.cached_tokens == 0  # KV from the old weights is not reused
    assert conv.token_log.versions[-1] == 1
    recomputed = _recomputed(engine, conv.token_log.ids)
    last = len(conv.token_log.ids) - 1
    assert conv.token_log.logprobs[last] == pytest.approx(recomputed[last], abs=2e-4)


def test_episode_on_a_real_repository(tiny_model_dir: Path, git_repo: Path) -> None:
    from leaf_cli.agent import Limits, run_episode
    from leaf_cli.tools import Workspace
    from leaf_train.rl.samples import sample_from_trajectory

    engine = TransformersEngine.load(tiny_model_dir, context_limit=8192)  # bytes as tokens: long prompts
    traj = run_episode("Fix add().", engine, Workspace(root=git_repo), sampling=SAMPLING, limits=Limits(max_turns=2))
    assert traj.exit_reason in {"final_answer", "max_tokens", "max_turns", "format_error"}, traj.exit_message
    sample = sample_from_trajectory(traj, 0.0, "t")
    assert sample.length == sum(t.usage.completion_tokens for t in traj.turns) > 0
    assert sample.loss_mask[0] == 0 and len(sample.ids) == len(sample.behaviour_logprobs)


@pytest.mark.llama
def test_user_message_mid_episode_on_qwen35_rerenders_canonically(tiny_qwen35_hf: Path) -> None:
    """A format-error message in an RL episode: Qwen3.5's template drops the earlier reasoning, so the engine
    re-renders canonically (it raised EngineError here before) and keeps the old log for training."""
    engine = _engine(tiny_qwen35_hf)
    sampling = Sampling(temperature=1.0, top_p=1.0, top_k=0, max_tokens=6, seed=5)
    conv = Conversation(messages=[Message(role="system", content="sys"), Message(role="user", content="do it")])
    first = engine.complete(conv, [], sampling)
    old = conv.token_log.model_copy(deep=True)
    conv.append(first.to_message())
    conv.append(Message(role="user", content="Your reply was not a valid tool call."))
    second = engine.complete(conv, [], sampling)
    log = conv.token_log
    prompt = log.ids[: second.usage.prompt_tokens]
    assert prompt == engine._encode(engine.render(conv.messages, [], True, True))  # the template's own rendering
    assert log.ids[-len(second.token_ids):] == second.token_ids and sum(log.mask) == len(second.token_ids)
    assert log.superseded[-1].ids == old.ids and sum(log.superseded[-1].mask) == len(first.token_ids)
    assert len(log.ids) == len(log.mask) == len(log.logprobs) == len(log.versions)
