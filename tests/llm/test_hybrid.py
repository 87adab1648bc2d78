"""The llama.cpp engine on the hybrid architecture (the tiny random-weight Qwen3.5 fixture, GGUF `qwen35`).

llama.cpp cannot cut a hybrid's recurrent state inside the sequence, so every case where the context must go
back or serve another conversation is a full re-prefill unless leaf restores a saved state. Each test runs
the case with saved states and, where it proves the test can fail, without them (the engine as it was).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from leaf_cli.llm.engine import Sampling
from leaf_cli.llm.messages import Conversation, Message
from leaf_cli.tools import tool_schemas

pytestmark = pytest.mark.llama

GREEDY = Sampling(temperature=0.0, max_tokens=8)
N_CTX = 8192


def tools() -> list[dict[str, Any]]:
    """Read and Bash only: a short tools block keeps the byte-heavy prompts of the tiny model fast."""
    return [t for t in tool_schemas() if t["function"]["name"] in ("Read", "Bash")]


def make(path: Path, **options: Any) -> Any:
    from leaf_cli.llm.llamacpp import LlamaCppEngine

    return LlamaCppEngine(path, n_ctx=N_CTX, **options)


@pytest.fixture(scope="module")
def engine(tiny_qwen35_gguf: Path) -> Any:
    return make(tiny_qwen35_gguf)


def conv(task: str = "Fix the bug in calc.py.") -> Conversation:
    return Conversation(messages=[Message(role="system", content="You are a coding agent."),
                                  Message(role="user", content=task)])


def turn(engine: Any, c: Conversation, result: str | None = None, sampling: Sampling = GREEDY, **kw: Any) -> Any:
    reply = engine.complete(c, tools(), sampling, **kw)
    c.append(reply.to_message())
    if result is not None:
        c.append(Message(role="tool", content=result, tool_call_id="c", name="Read"))
    return reply


def test_llama_cpp_reports_the_fixture_hybrid(engine: Any) -> None:
    from llama_cpp import llama_cpp as lib

    assert engine.info.architecture == "qwen35"
    assert lib.llama_model_is_hybrid(engine.llm._model.model)
    assert engine.hybrid and engine.template.tool_format == "qwen_xml"


def test_twenty_turns_evaluate_at_most_1_05_per_new_token(engine: Any) -> None:
    c = conv()
    end, evaluated, new = 0, 0, 0
    for t in range(20):
        reply = turn(engine, c, f"src/m{t}.py\n1. def f{t}(x):\n2.     return x")
        if t:
            evaluated += engine.last_evaluated
            new += reply.usage.prompt_tokens - end
        end = reply.usage.prompt_tokens + reply.usage.completion_tokens
    assert c.token_log.ids[:end - 1] == engine.llm.input_ids[:end - 1].tolist()  # the last token is never evaluated
    assert evaluated / new <= 1.05, (evaluated, new)


def interrupted(engine: Any, c: Conversation) -> None:
    """A reply cut by Ctrl-C as `leaf chat` sees it: KeyboardInterrupt out of the streaming callback."""
    def stop(_kind: str, _text: str) -> None:
        raise KeyboardInterrupt

    with contextlib.suppress(KeyboardInterrupt):
        engine.complete(c, tools(), GREEDY, stop)


@pytest.mark.parametrize("saved_states", [True, False])
def test_ctrl_c_mid_reply_then_a_new_message(tiny_qwen35_gguf: Path, saved_states: bool) -> None:
    engine = make(tiny_qwen35_gguf, **({} if saved_states else {"max_checkpoints": 0, "snapshot_mb": 0}))
    c = conv()
    for t in range(3):
        turn(engine, c, f"result {t}")
    turn(engine, c)
    c.append(Message(role="user", content="Now add a test."))
    interrupted(engine, c)
    # What the interrupted turn had evaluated: the conversation rendered canonically at that user message.
    seen = engine._tokenize(engine.template.render_messages(c.messages, tools(), True, True))
    c.append(Message(role="user", content="Sorry: put it in tests/test_calc.py."))
    reply = turn(engine, c)
    prompt = c.token_log.ids[:reply.usage.prompt_tokens]
    new = len(prompt) - next(i for i, (x, y) in enumerate(zip(seen, prompt)) if x != y)
    if saved_states:  # back to the checkpoint at the turn boundary, a token or two before the divergence
        assert engine.last_evaluated <= new + 3, (engine.last_evaluated, new)
        assert c.token_log.ids[:-1] == engine.llm.input_ids[:len(c.token_log.ids) - 1].tolist()
    else:  # the engine as it was: everything again
        assert engine.last_evaluated == reply.usage.prompt_tokens


def test_conversations_taking_turns_reuse_their_own_state(engine: Any) -> None:
    a, b = conv("Task A."), conv("Task B.")
    turn(engine, a, "a0")
    first_b = turn(engine, b, "b0")
    assert engine.last_evaluated < first_b.usage.prompt_tokens // 4  # the shared system turn is a checkpoint
    for t in range(1, 4):
        for c in (a, b):
            held = len(c.token_log.ids)
            reply = turn(engine, c, f"r{t}")
            assert engine.last_evaluated <= reply.usage.prompt_tokens - held + 1


def test_rollouts_of_one_task_start_from_a_checkpoint(engine: Any) -> None:
    first = turn(engine, conv("TaskPilot task 3: make test_add pass."), "r")
    for _ in range(2):
        again = turn(engine, conv("TaskPilot task 3: make test_add pass."), "r")
        assert again.usage.prompt_tokens == first.usage.prompt_tokens
        assert engine.last_evaluated < 16  # only the generation prompt


def test_user_message_rerenders_canonically_from_the_first_difference(engine: Any) -> None:
    c = conv()
    for t in range(4):
        turn(engine, c, f"result {t}")
    old = c.token_log.model_copy(deep=True)
    c.append(Message(role="user", content="Your reply was not a valid tool call."))
    reply = turn(engine, c)
    prompt = c.token_log.ids[:reply.usage.prompt_tokens]
    canonical = engine.template.render_messages(c.messages[:-1], tools(), True, True)
    assert prompt == engine._tokenize(canonical)  # the prompt is the template's own rendering
    assert "</think>" not in canonical.split("Your reply was")[0].split("<|im_start|>user\nFix")[1]
    same = next(i for i, (x, y) in enumerate(zip(old.ids, prompt)) if x != y)
    assert reply.usage.cached_tokens <= same < reply.usage.prompt_tokens
    assert engine.last_evaluated < reply.usage.prompt_tokens // 2  # from a checkpoint, not from token 0
    assert c.token_log.superseded[-1].ids == old.ids and sum(c.token_log.superseded[-1].mask) == sum(old.mask)
    assert c.token_log.mask[:same] == old.mask[:same] and not any(c.token_log.mask[same:reply.usage.prompt_tokens])


def test_thinking_budget_closes_the_reasoning_and_the_reply_goes_on(tiny_qwen35_gguf: Path) -> None:
    engine = make(tiny_qwen35_gguf, constrain_tools=True, tool_choice="required", parallel_tool_calls=False)
    c = conv()
    budget = Sampling(temperature=0.0, max_tokens=96, thinking_budget=3)
    reply = turn(engine, c, sampling=budget)
    close = engine._tokenize("\n</think>\n\n")
    text = engine.llm.detokenize(reply.token_ids, special=True).decode("utf-8", errors="replace")
    ids = reply.token_ids
    at = next(i for i in range(len(ids)) if ids[i:i + len(close)] == close)
    assert at <= 3 and "</think>" not in engine.llm.detokenize(ids[:at], special=True).decode(errors="replace")
    after = text.split("</think>", 1)[1].lstrip(" \t\n")
    assert after.startswith("<tool_call>\n<function=")  # the grammar's Qwen3-Coder XML call follows at once
    tail = c.token_log.mask[-len(ids):]
    if at == 3:  # the budget closed it: leaf's tokens are prompt in the log, the model's are sampled
        assert tail[at:at + len(close)] == [0] * len(close) and tail[:at] == [1] * at
    if reply.finish_reason == "stop":
        assert reply.tool_calls and reply.tool_calls[0].name in {"Read", "Bash"}
