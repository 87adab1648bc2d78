"""The llama.cpp engine reports prompt evaluation chunk by chunk, and reporting changes nothing it computes."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.llm.engine import Sampling
from leaf_cli.llm.messages import Conversation, Message
from leaf_cli.llm.progress import reporting_prefill

pytestmark = [pytest.mark.llama]

TASK = "List the files of this repository, then explain in one sentence what a unit test is."


def _turn(path: Path, reports: list[tuple[int, int]] | None) -> tuple[list[int], int]:
    from leaf_cli.llm.llamacpp import LlamaCppEngine
    from leaf_cli.tools import TOOLS, tool_schemas

    engine = LlamaCppEngine(path, n_ctx=4096)
    engine.llm.n_batch = 256  # several chunks for a first prompt of the system prompt and the tools
    conv = Conversation(messages=[Message(role="system", content="You are a coding agent."),
                                  Message(role="user", content=TASK)])
    sampling = Sampling(temperature=0, max_tokens=12, enable_thinking=False)
    with reporting_prefill((lambda d, t: reports.append((d, t))) if reports is not None else None):
        turn = engine.complete(conv, tool_schemas(TOOLS), sampling)
    return turn.token_ids, turn.usage.prompt_tokens


def test_prefill_is_reported_per_batch_and_the_reply_is_unchanged(smollm2_path: Path) -> None:
    reports: list[tuple[int, int]] = []
    ids, prompt_tokens = _turn(smollm2_path, reports)
    total = reports[0][1]
    assert total == prompt_tokens > 256  # a fresh context evaluates the whole prompt
    assert reports[0] == (0, total) and reports[-1] == (total, total)  # said at once, then after each chunk
    done = [d for d, _ in reports]
    assert done == sorted(done) and all(t == total for _, t in reports)
    assert all(b - a <= 256 for a, b in zip(done, done[1:]))
    assert len(reports) >= 1 + -(-total // 256)
    plain_ids, _ = _turn(smollm2_path, None)  # the same greedy reply without a reporter
    assert ids == plain_ids
