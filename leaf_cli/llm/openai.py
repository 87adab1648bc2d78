"""The OpenAI-compatible engine: chat completions over HTTP (llama-server, llama_cpp.server, vLLM, SGLang, ...).

The history goes out exactly as kept (reasoning_content echoed, tool calls with their ids), which is what lets
a server's prefix cache hit (runtime.md §11). Replies stream as server-sent events: reasoning and content deltas
go to `on_delta`, tool-call deltas are assembled by index. A server that returns calls as plain text (no tool
parser configured) gets leaf's own parser. When thinking was asked for and the server gives no structured
reasoning (llama_cpp.server with a Qwen3.5 template, whose generation prompt opens `<think>`), the content is
`reasoning…</think>answer`: as vLLM's Qwen3 reasoning parser reads it, text before the first `</think>` is
reasoning and the rest is content, parsed for calls; content without `</think>` stays content (the reading
lives in `openai_reply`). Transient failures (429, 5xx, dropped connections) are retried with bounded
exponential backoff; an error that blames the request's shape gets the request reshaped (`_RESHAPES`: one small
function each); everything else is one `EngineError` line, or `ContextOverflow` when the server says the
prompt does not fit.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass
from typing import Any, Callable

import httpx

from leaf_cli.llm.engine import ContextOverflow, EngineError, OnDelta, Sampling
from leaf_cli.llm.messages import AssistantTurn, Conversation
from leaf_cli.llm.openai_reply import OVERFLOW, EmptyStream, message_of, read_reply

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# Parameters outside OpenAI's own API; strict servers reject them with a 400, after which leaf stops sending them.
EXTRA_PARAMS = ("top_k", "min_p", "repeat_penalty", "repetition_penalty", "chat_template_kwargs",
                "parallel_tool_calls", "stream_options")
TOKEN_FIELDS = ("max_completion_tokens", "max_tokens")
"""Both carry the turn's cap: OpenAI's current name, and the one llama_cpp.server and older servers read
(they ignore the other silently). A server that rejects one of them gets the other alone."""
# A server whose template cannot render the conversation (llama_cpp.server's Jinja has no `from_json`, which the
# Qwen3.5 template applies to string tool-call arguments) answers 500; it is not transient.
_TEMPLATE_FAILURE = re.compile(r"no filter named|TemplateSyntaxError|TemplateRuntimeError|UndefinedError|"
                               r"jinja|chat template", re.I)


def chat_url(base_url: str) -> str:
    """`http://host:8000` and `http://host:8000/v1` both mean `http://host:8000/v1/chat/completions`."""
    base = base_url.rstrip("/")
    if not re.match(r"^https?://", base):
        raise EngineError(f"--base-url must start with http:// or https://, got {base_url!r}")
    if base.endswith("/chat/completions"):
        return base
    if re.match(r"^https?://[^/]+$", base):
        base += "/v1"
    return base + "/chat/completions"


class OpenAIEngine:
    """An engine behind an OpenAI-compatible `/v1/chat/completions` endpoint.

    `model=None` asks the server's `/v1/models` for its (first) model. `transport` replaces the network for
    unit tests of retries; `sleep` is the backoff clock.
    """

    def __init__(self, base_url: str, model: str | None = None, *, api_key: str | None = None,
                 context_limit: int = 65536, stream: bool = True, timeout: float = 600.0, max_retries: int = 4,
                 backoff: float = 0.5, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.url = chat_url(base_url)
        self.base_url = base_url
        self.model = model
        self.context_limit = context_limit
        self.stream = stream
        self.max_retries = max_retries
        self.backoff = backoff
        self._sleep = sleep
        self._dropped: set[str] = set()  # request fields this server refused: never sent again
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(headers=headers, transport=transport,
                                    timeout=httpx.Timeout(timeout, connect=10.0))

    @property
    def name(self) -> str:
        return f"openai:{self.model or '?'}@{self.base_url}"

    def close(self) -> None:
        self._client.close()

    def complete(self, conversation: Conversation, tools: list[dict[str, Any]], sampling: Sampling,
                 on_delta: OnDelta | None = None) -> AssistantTurn:
        """One chat completion. Raises EngineError / ContextOverflow with a one-line message."""
        started = time.monotonic()
        body = self._body(conversation, tools, sampling)
        turn = self._request(body, tools, on_delta)
        turn.seconds = time.monotonic() - started
        return turn

    def _body(self, conversation: Conversation, tools: list[dict[str, Any]], sampling: Sampling) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model or self._discover_model(),
            "messages": [m.to_openai() for m in conversation.messages],
            "temperature": sampling.temperature, "top_p": sampling.top_p,
            "stream": self.stream,
            "top_k": sampling.top_k, "min_p": sampling.min_p,
            "chat_template_kwargs": {"enable_thinking": sampling.enable_thinking},
        }
        for field in TOKEN_FIELDS:
            body[field] = sampling.max_tokens
        if sampling.repeat_penalty != 1.0:  # llama.cpp's name and vLLM's name for the same knob
            body["repeat_penalty"] = body["repetition_penalty"] = sampling.repeat_penalty
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if tools:
            body.update(tools=tools, tool_choice="auto", parallel_tool_calls=True)
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def _discover_model(self) -> str:
        url = self.url[: -len("/chat/completions")] + "/models"
        try:
            response = self._client.get(url, timeout=30.0)
            response.raise_for_status()
            self.model = str(response.json()["data"][0]["id"])
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise EngineError(f"no --model given and {url} did not name one ({type(exc).__name__}); "
                              "pass --model NAME") from None
        return self.model

    def _request(self, body: dict[str, Any], tools: list[dict[str, Any]], on_delta: OnDelta | None) -> AssistantTurn:
        """Send `body` until a reply comes back: a reshaped request after an error that blames its shape, a
        backoff retry after a transient failure, one unstreamed try after a stream that broke before its first
        token; anything else is one EngineError line."""
        attempt = 0
        while True:
            sent = self._on_the_wire(body)
            state = _Attempt(on_delta)
            try:
                with self._client.stream("POST", self.url, json=sent) as response:
                    state.answered = True
                    if response.status_code < 400:
                        return read_reply(response, tools, state.relay, _opened_think(body))
                    response.read()
                    reshaped = _reshaped(response, sent)
                    if reshaped is not None:
                        self._dropped |= set(sent) - set(reshaped)  # never sent again to this server
                        body = reshaped
                        continue
                    retry_after = self._check_status(response, attempt)
            except EmptyStream:
                # llama_cpp.server answers 200 and an empty stream when the request fails before the first
                # token (e.g. "Automatic streaming tool choice is not supported"): ask once more, unstreamed.
                if not sent.get("stream"):
                    raise EngineError("the model server sent an empty reply") from None
                body = _unstreamed(body)
                continue
            except httpx.TransportError as exc:
                if state.answered and not state.delivered and sent.get("stream"):
                    # llama_cpp.server answers 200, then drops the stream when the request fails before the
                    # first token (a chat template error): unstreamed, the same request returns the real error.
                    body = _unstreamed(body)
                    continue
                if state.delivered or attempt >= self.max_retries:
                    raise EngineError(f"cannot reach the model server at {self.base_url}: "
                                      f"{type(exc).__name__}: {str(exc) or 'connection failed'}") from None
                retry_after = None
            self._sleep(self._delay(attempt, retry_after))
            attempt += 1

    def _on_the_wire(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` less the fields this server refused earlier; `stream_options` only with a stream."""
        sent = {k: v for k, v in body.items() if k not in self._dropped}
        if not sent.get("stream"):
            sent.pop("stream_options", None)
        return sent

    def _check_status(self, response: httpx.Response, attempt: int) -> float | None:
        """Raise the right error for a failed response, or return a Retry-After hint to retry."""
        message = _error_message(response)
        code = response.status_code
        if OVERFLOW.search(message) or OVERFLOW.search(response.text):
            raise ContextOverflow(f"the conversation does not fit the server's context: {message}")
        if _TEMPLATE_FAILURE.search(message):  # the same conversation fails the same way: no retry
            raise EngineError(f"the model server's chat template failed on this conversation (HTTP {code}): {message}")
        if code in RETRY_STATUS and attempt < self.max_retries:
            return _retry_after(response)
        if code in (401, 403):
            raise EngineError(f"the model server refused the request (HTTP {code}: {message}); "
                              "check --api-key / LEAF_API_KEY")
        if code == 404:
            raise EngineError(f"HTTP 404 from {self.url}: {message}; check --base-url and --model")
        tries = f" after {attempt + 1} attempts" if code in RETRY_STATUS else ""
        raise EngineError(f"the model server answered HTTP {code}{tries}: {message}")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, 30.0)
        return min(self.backoff * 2**attempt, 8.0) * (0.5 + random.random() / 2)

@dataclass
class _Attempt:
    """What one try of a request has seen: a transport error after the status line is no "unreachable"
    server, and one after a delta reached the screen cannot be retried (the text would show twice)."""

    on_delta: OnDelta | None
    answered: bool = False
    delivered: bool = False

    def relay(self, kind: Any, text: str) -> None:
        self.delivered = True
        if self.on_delta is not None:
            self.on_delta(kind, text)


def _unstreamed(body: dict[str, Any]) -> dict[str, Any]:
    """The same request, asked for in one piece: the fallback for every stream the server cannot give."""
    return {**body, "stream": False}


def _drop_the_named_token_field(text: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """A server that knows only one name of the token cap says which one it rejects: keep the other."""
    named = {m.start(): m.group(0) for m in re.finditer(r"\bmax_(?:completion_)?tokens\b", text)}
    if not named or not all(field in body for field in TOKEN_FIELDS):
        return None
    rejected = named[min(named)]  # the one the error names first ("'max_tokens' is not supported; use ...")
    return {k: v for k, v in body.items() if k != rejected}


def _drop_extras(text: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """A strict server that names a parameter outside OpenAI's API gets none of them."""
    if not any(p in text and p in body for p in EXTRA_PARAMS):
        return None
    return {k: v for k, v in body.items() if k not in EXTRA_PARAMS}


def _unstream_when_blamed(text: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """llama_cpp.server: "Automatic streaming tool choice is not supported"."""
    return _unstreamed(body) if body.get("stream") and "stream" in text.lower() else None


_RESHAPES = (_drop_the_named_token_field, _drop_extras, _unstream_when_blamed)
"""The request shapes leaf falls back to after a 400/422 that blames the shape, tried in order."""


def _reshaped(response: httpx.Response, body: dict[str, Any]) -> dict[str, Any] | None:
    """The request to send instead of `body` after `response`, or None when the error is not about its shape."""
    if response.status_code not in (400, 422) or OVERFLOW.search(response.text):
        return None
    for reshape in _RESHAPES:
        reshaped = reshape(response.text, body)
        if reshaped is not None:
            return reshaped
    return None


def _error_message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return (response.text.strip() or response.reason_phrase)[:300]
    if isinstance(data, dict):
        return message_of(data.get("error", data.get("detail", data)))[:300]
    return str(data)[:300]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to exponential backoff


def _opened_think(body: dict[str, Any]) -> bool:
    """Whether the request asked the template to open a think block (Qwen3.5's generation prompt does)."""
    kwargs = body.get("chat_template_kwargs")
    return bool(kwargs.get("enable_thinking")) if isinstance(kwargs, dict) else False
