"""Prompt-lookup drafting: the draft lookup (longest match, agreement), the rejection rule's distribution
(χ²), and the engine's output with drafting against plain decoding on SmolLM2 and on the hybrid tiny Qwen3.5
(rollback of rejected drafts through llama.cpp's per-token recurrent snapshots)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from leaf_cli.llm.engine import Sampling
from leaf_cli.llm.messages import Conversation, Message
from leaf_cli.llm.sampler import TokenSampler
from leaf_cli.llm.speculate import longest_match, lookup
from leaf_cli.tools import tool_schemas

CHI2_999 = {19: 43.82, 20: 45.31}
"""χ² critical values at p = 0.001 for the degrees of freedom used below (a correct sampler fails 1 in 1000)."""


def test_longest_match_finds_the_longest_repeated_suffix() -> None:
    ends, n = longest_match(np.array([1, 2, 3, 1, 2, 3]))
    assert n == 3 and ends.tolist() == [2]  # "1 2 3" ended at index 2
    assert longest_match(np.array([1, 2, 3, 1, 2, 3]), max_n=2)[1] == 2
    assert longest_match(np.array([1, 2, 3, 4]))[1] == 0  # the last token never occurred before
    assert longest_match(np.array([7]))[1] == 0 and longest_match(np.zeros(0, dtype=np.intc))[1] == 0


def test_lookup_prefers_the_longest_match_over_a_more_recent_shorter_one() -> None:
    history = np.array([1, 2, 3, 4, 5, 6, 7, 0, 3, 4, 5, 6, 8, 0, 1, 2, 3, 4, 5, 6])
    assert lookup(history, 3) == [7, 0, 3]  # the 6-token suffix, not the later "3 4 5 6" that led to 8
    assert lookup(np.array([1, 2, 3, 4, 0, 2, 3]), 2) == [4, 0]
    assert lookup(np.array([1, 2, 3, 4]), 4) == []  # no earlier occurrence of the last token
    assert lookup(np.array([5, 1, 5]), 4) == []  # a one-token match is too weak to draft from
    assert lookup(np.array([1, 2, 1, 2]), 0) == []


def test_lookup_stops_where_the_earlier_occurrences_disagree() -> None:
    history = np.array([0, 1, 2, 3, 4, 0, 1, 2, 3, 5, 0, 1, 2])
    assert lookup(history, 8) == [3]  # both "0 1 2" go on with 3, then one with 4 and one with 5
    assert lookup(history, 8, agreement=0.5) == [3, 5, 0, 1, 2]  # an even split allowed: the most recent
    numbers = np.array([7, 8, 1, 7, 8, 2, 7, 8, 3, 4, 7, 8])  # "7 8" was followed by 1, 2 and 3
    assert lookup(numbers, 3) == [] and lookup(numbers, 3, agreement=0.0) == [3, 4, 7]


def chi2(counts: np.ndarray, expected: np.ndarray) -> float:
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("draft_rank", [0, 3, 30])  # the likeliest token, a middling one, one outside top-k
def test_verify_draws_from_the_same_distribution_as_sample(seed: int, draft_rank: int) -> None:
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 1.5, size=200).astype(np.float32)
    s = Sampling(temperature=0.8, top_p=1.0, top_k=20, min_p=0.0, seed=seed)
    ids, p = TokenSampler(s).distribution(logits)
    assert len(ids) == 20
    draft = int(np.argsort(-logits)[draft_rank])
    sampler, n = TokenSampler(s), 20_000
    index = {int(t): i for i, t in enumerate(ids)}
    counts = np.zeros(len(ids))
    accepted = 0
    for _ in range(n):
        token, logprob, ok = sampler.verify(logits, draft)
        assert logprob == pytest.approx(float(np.log(p[index[token]])))
        assert ok == (token == draft)
        counts[index[token]] += 1
        accepted += ok
    assert chi2(counts, n * p) < CHI2_999[len(ids) - 1]
    expected_accept = p[index[draft]] if draft in index else 0.0
    assert accepted / n == pytest.approx(expected_accept, abs=0.02)


def test_verify_under_greedy_accepts_exactly_the_argmax() -> None:
    logits = np.array([0.0, 5.0, 3.0], dtype=np.float32)
    assert TokenSampler(Sampling(temperature=0.0)).verify(logits, 1) == (1, 0.0, True)
    assert TokenSampler(Sampling(temperature=0.0)).verify(logits, 2) == (1, 0.0, False)


CODE = "\n".join(f"def f{i}(x):\n    return x * {i} + {i % 7}" for i in range(12))


def copy_conversation() -> Conversation:
    """A Read then a request to write the file back: the Write-heavy turn drafting is for."""
    return Conversation(messages=[
        Message(role="system", content="You are a coding agent."),
        Message(role="user", content="Copy the file below exactly, then stop.\n\n" + CODE)])


def run(path: Path, speculate: bool, turns: int = 2, max_tokens: int = 96) -> tuple[list[list[int]], Any, Conversation]:
    from leaf_cli.llm.llamacpp import LlamaCppEngine

    e = LlamaCppEngine(path, n_ctx=4096, speculate=speculate)
    c, out = copy_conversation(), []
    tools = [t for t in tool_schemas() if t["function"]["name"] in ("Read", "Write")]
    for t in range(turns):
        reply = e.complete(c, tools, Sampling(temperature=0.0, max_tokens=max_tokens))
        out.append(reply.token_ids)
        c.append(reply.to_message())
        c.append(Message(role="tool", content=f"calc{t}.py\n" + CODE, tool_call_id="c", name="Read"))
        if t + 1 < turns:
            c.append(Message(role="user", content="Again, the same file."))
    return out, e, c


@pytest.mark.llama
@pytest.mark.parametrize("fixture", ["smollm2_path", "tiny_qwen35_gguf"])
def test_greedy_output_is_identical_with_drafting(request: pytest.FixtureRequest, fixture: str) -> None:
    path = request.getfixturevalue(fixture)
    plain, _, _ = run(path, speculate=False)
    drafted, e, c = run(path, speculate=True)
    assert drafted == plain
    assert e.drafted > 0 and e.accepted > 0  # drafts were verified and kept
    if fixture == "smollm2_path":
        assert e.accepted < e.drafted  # and some rolled back (the hybrid's rollback: the test below)
    held = e.llm.n_tokens  # rejected drafts are gone: the context holds the token log, nothing past it
    assert held >= len(c.token_log.ids) - 1 and e.llm.input_ids[:held].tolist() == c.token_log.ids[:held]


@pytest.mark.llama
def test_a_hybrid_rolls_rejected_drafts_back(tiny_qwen35_gguf: Path) -> None:
    """After a verify batch and a rollback to keep 3 of its tokens, the next logits equal those of a context
    that only ever evaluated the kept tokens: the recurrent state went back too (llama.cpp's `n_rs_seq`)."""
    from llama_cpp import llama_cpp as lib

    from leaf_cli.llm.llama_runtime import load_llama
    from leaf_cli.llm.speculate import DRAFT_TOKENS, decode_all, drop_after

    llm, _ = load_llama(tiny_qwen35_gguf, n_ctx=512, n_rs_seq=DRAFT_TOKENS)
    assert lib.llama_model_is_hybrid(llm._model.model) and lib.llama_n_rs_seq(llm.ctx) == DRAFT_TOKENS
    prompt = llm.tokenize(b"def add(a, b):\n    return a - b\n")
    batch = llm.tokenize(b" x = add(1, 2) # nine tokens here")[:DRAFT_TOKENS + 1]
    llm.eval(prompt)
    decode_all(llm, batch)
    assert drop_after(llm, len(prompt) + 3)
    after = decode_all(llm, [batch[3]])[0]
    fresh, _ = load_llama(tiny_qwen35_gguf, n_ctx=512, n_rs_seq=DRAFT_TOKENS)
    fresh.eval(prompt)
    decode_all(fresh, batch[:3])
    expected = decode_all(fresh, [batch[3]])[0]
    np.testing.assert_allclose(after, expected, rtol=1e-4, atol=1e-4)
    stale, _ = load_llama(tiny_qwen35_gguf, n_ctx=512)  # the same cut without snapshots: llama.cpp refuses it
    stale.eval(prompt)
    decode_all(stale, batch)
    assert not drop_after(stale, len(prompt) + 3)
