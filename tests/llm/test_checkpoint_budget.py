"""Recurrent-state checkpoints stay within a byte budget tied to the model (issue 20, part 5), on the tiny
hybrid Qwen3.5 fixture: the budget, not only the count, decides how many are kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.llm.llamacpp import LlamaCppEngine, checkpoint_budget

pytestmark = pytest.mark.llama


def test_the_budget_is_an_eighth_of_the_model_with_a_floor() -> None:
    assert checkpoint_budget(int(2.58 * 2**30)) == int(2.58 * 2**30) // 8  # the 4B Q4_K_M: ~330 MB
    assert checkpoint_budget(10 << 20) == 64 << 20  # a tiny model still keeps a few


def _fill(engine: LlamaCppEngine, positions: int) -> None:
    llm = engine.llm
    llm.eval(llm.tokenize(b"def f(x):\n    return x\n"))
    for _ in range(positions):
        engine.states.checkpoint()
        llm.eval(llm.tokenize(b" x", add_bos=False))


def test_checkpoints_beyond_the_byte_budget_are_dropped(tiny_qwen35_gguf: Path) -> None:
    engine = LlamaCppEngine(tiny_qwen35_gguf, n_ctx=2048, max_checkpoints=64)
    _fill(engine, 6)
    one = engine.states.checkpoints[0].size
    assert len(engine.states.checkpoints) == 6 and engine.states.checkpoint_bytes >= 6 * one  # the count binds

    engine = LlamaCppEngine(tiny_qwen35_gguf, n_ctx=2048, max_checkpoints=64)
    engine.states.checkpoint_bytes = int(2.5 * one)
    _fill(engine, 6)
    kept = engine.states.checkpoints
    assert len(kept) == 2 and sum(c.size for c in kept) <= engine.states.checkpoint_bytes
    assert [len(c.tokens) for c in kept] == sorted(len(c.tokens) for c in kept)[-2:]  # the newest stay

    engine.states.checkpoint_bytes = one - 1  # a checkpoint larger than the whole budget is not taken
    before = list(kept)
    _fill(engine, 1)
    assert engine.states.checkpoints == before
