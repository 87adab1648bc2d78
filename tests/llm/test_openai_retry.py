"""Retry and backoff of the OpenAI engine, driven through httpx's MockTransport (no timing, no sockets)."""

from __future__ import annotations

import json

import httpx
import pytest

from leaf_cli.llm.engine import EngineError, Sampling
from leaf_cli.llm.messages import Conversation, Message
from leaf_cli.llm.openai import OpenAIEngine

OK = {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
      "usage": {"prompt_tokens": 3, "completion_tokens": 1}}


def convo() -> Conversation:
    return Conversation(messages=[Message(role="user", content="hi")])


def engine_with(outcomes: list[object], slept: list[float], max_retries: int = 4) -> tuple[OpenAIEngine, list[int]]:
    """Each outcome is an exception to raise or a (status, body) pair to answer, in order."""
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        status, body = outcome  # type: ignore[misc]
        return httpx.Response(status, json=body)

    engine = OpenAIEngine("http://model.test", "m", stream=False, transport=httpx.MockTransport(handler),
                          sleep=slept.append, max_retries=max_retries, backoff=0.5)
    return engine, calls


def test_connection_resets_are_retried_with_growing_backoff() -> None:
    slept: list[float] = []
    outcomes: list[object] = [httpx.ConnectError("connection reset by peer"),
                              httpx.RemoteProtocolError("peer closed connection"),
                              httpx.ReadError("reset"), (200, OK)]
    engine, calls = engine_with(outcomes, slept)
    assert engine.complete(convo(), [], Sampling()).content == "ok"
    assert len(calls) == 4 and len(slept) == 3
    # 0.5 * 2**attempt, with jitter in [50%, 100%]
    for attempt, delay in enumerate(slept):
        assert 0.25 * 2**attempt <= delay <= 0.5 * 2**attempt


def test_retries_are_bounded() -> None:
    slept: list[float] = []
    engine, calls = engine_with([httpx.ConnectError("refused")] * 10, slept, max_retries=3)
    with pytest.raises(EngineError, match="cannot reach the model server at http://model.test: ConnectError: refused"):
        engine.complete(convo(), [], Sampling())
    assert len(calls) == 4 and len(slept) == 3


def test_backoff_is_capped_and_retry_after_is_bounded() -> None:
    slept: list[float] = []
    outcomes: list[object] = [(502, {"error": "bad gateway"})] * 6 + [(200, OK)]
    engine, _ = engine_with(outcomes, slept, max_retries=6)
    engine.complete(convo(), [], Sampling())
    assert max(slept) <= 8.0

    def handler(request: httpx.Request) -> httpx.Response:
        if len(seen) == 0:
            seen.append(1)
            return httpx.Response(429, headers={"Retry-After": "3600"}, json={"error": "slow down"})
        return httpx.Response(200, json=OK)

    seen: list[int] = []
    waits: list[float] = []
    engine = OpenAIEngine("http://model.test", "m", stream=False, transport=httpx.MockTransport(handler),
                          sleep=waits.append)
    engine.complete(convo(), [], Sampling())
    assert waits == [30.0]  # an hour-long Retry-After is not honoured as is


def test_client_errors_are_not_retried() -> None:
    slept: list[float] = []
    engine, calls = engine_with([(400, {"error": {"message": "messages: field required"}})], slept)
    with pytest.raises(EngineError, match="HTTP 400: messages: field required"):
        engine.complete(convo(), [], Sampling())
    assert len(calls) == 1 and slept == []


def test_request_body_carries_sampling_and_seed() -> None:
    bodies: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=OK)

    engine = OpenAIEngine("http://model.test/v1", "m", stream=False, transport=httpx.MockTransport(handler))
    engine.complete(convo(), [], Sampling(temperature=0.0, max_tokens=64, seed=7, repeat_penalty=1.1))
    body = bodies[0]
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.0, 64, 7)
    assert body["repeat_penalty"] == body["repetition_penalty"] == 1.1
    assert body["model"] == "m" and body["stream"] is False and "stream_options" not in body
