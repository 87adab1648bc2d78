"""The OpenAI-compatible engine: chat completions over HTTP (llama-server, llama_cpp.server, vLLM, SGLang, ...).

The history goes out exactly as kept (reasoning_content echoed, tool calls with their ids), which is what lets
a server's prefix cache hit (runtime.md §11). Replies stream as server-sent events: reasoning and content deltas
go to `on_delta`, tool-call deltas are assembled by index. A server that returns calls as plain text (no tool
parser configured) gets leaf's own parser. When thinking was asked for and the server gives no structured
reasoning (llama_cpp.server with a Qwen3.5 template, whose generation prompt opens `<think>`), the content is
`reasoning…</think>answer`: as vLLM's Qwen3 reasoning parser reads it, text before the first `</think>` is
reasoning and the rest is content, parsed for calls; content without `</think>` stays content. Transient failures (429, 5xx, dropped connections) are retried with
bounded exponential backoff; everything else is one `EngineError` line, or `ContextOverflow` when the server
says the prompt does not fit.
"""

from __future__ import annotations

import json
import random
import re
import time
from typing import Any, Callable, Iterator

import httpx

from leaf_cli.llm.engine import ContextOverflow, EngineError, OnDelta, Sampling
from leaf_cli.llm.messages import AssistantTurn, Conversation, ToolCall, TurnUsage

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# Parameters outside OpenAI's own API; strict servers reject them with a 400, after which leaf stops sending them.
EXTRA_PARAMS = ("top_k", "min_p", "repeat_penalty", "repetition_penalty", "chat_template_kwargs",
                "parallel_tool_calls", "stream_options")
# FrogNano's harness read these as the context filling up (`max_context_len`), leaf as `max_context`.
_OVERFLOW = re.compile(r"context[_ ]length[_ ]exceeded|reduce the length|maximum context length|"
                       r"context length.*exceed|exceed.*context length|context window|context size|"
                       r"too many tokens|prompt is too long|exceeds? the (available )?context", re.I)
TOKEN_FIELDS = ("max_completion_tokens", "max_tokens")
"""Both carry the turn's cap: OpenAI's current name, and the one llama_cpp.server and older servers read
(they ignore the other silently). A server that rejects one of them gets the other alone."""
# A server whose template cannot render the conversation (llama_cpp.server's Jinja has no `from_json`, which the
# Qwen3.5 template applies to string tool-call arguments) answers 500; it is not transient.
_TEMPLATE_FAILURE = re.compile(r"no filter named|TemplateSyntaxError|TemplateRuntimeError|UndefinedError|"
                               r"jinja|chat template", re.I)
_CALL_MARKUP = ("<tool_call", "<function=", "<think>", "</think>", "```", '"arguments"')


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
        self._send_extras = True
        self._rejected: set[str] = set()  # token-cap fields this server refused
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
            if field not in self._rejected:
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
        attempt = 0
        while True:
            sent = body if self._send_extras else {k: v for k, v in body.items() if k not in EXTRA_PARAMS}
            delivered = [False]  # set once a delta reached on_delta: a retry then would show text twice
            answered = False  # the server sent a status line: a transport error after it is not "unreachable"

            def relay(kind: Any, text: str) -> None:
                delivered[0] = True
                if on_delta is not None:
                    on_delta(kind, text)

            try:
                with self._client.stream("POST", self.url, json=sent) as response:
                    answered = True
                    if response.status_code >= 400:
                        response.read()
                        if self._adapt(response, body):
                            continue
                        retry_after = self._check_status(response, attempt)
                    else:
                        return self._read(response, tools, relay, _opened_think(body))
            except _EmptyStream:
                # llama_cpp.server answers 200 and an empty stream when the request fails before the first
                # token (e.g. "Automatic streaming tool choice is not supported"): ask once more, unstreamed.
                if not body.get("stream"):
                    raise EngineError("the model server sent an empty reply") from None
                body["stream"] = False
                body.pop("stream_options", None)
                continue
            except httpx.TransportError as exc:
                if answered and not delivered[0] and body.get("stream"):
                    # llama_cpp.server answers 200, then drops the stream when the request fails before the
                    # first token (a chat template error): unstreamed, the same request returns the real error.
                    body["stream"] = False
                    body.pop("stream_options", None)
                    continue
                if delivered[0] or attempt >= self.max_retries:
                    raise EngineError(f"cannot reach the model server at {self.base_url}: "
                                      f"{type(exc).__name__}: {str(exc) or 'connection failed'}") from None
                retry_after = None
            self._sleep(self._delay(attempt, retry_after))
            attempt += 1

    def _adapt(self, response: httpx.Response, body: dict[str, Any]) -> bool:
        """Resend in a plainer shape after a 400 that blames the shape; True when `body` was changed.

        Non-OpenAI parameters named in the error are dropped for good; a server that cannot stream this
        request (llama_cpp.server: "Automatic streaming tool choice is not supported") gets one unstreamed.
        """
        if response.status_code not in (400, 422) or _OVERFLOW.search(response.text):
            return False
        text = response.text
        named = {m.start(): m.group(0) for m in re.finditer(r"\bmax_(?:completion_)?tokens\b", text)}
        if named and all(field in body for field in TOKEN_FIELDS):
            field = named[min(named)]  # the one the error names first ("'max_tokens' is not supported; use ...")
            self._rejected.add(field)
            del body[field]
            return True
        if self._send_extras and any(p in text for p in EXTRA_PARAMS):
            self._send_extras = False
            return True
        if body.get("stream") and "stream" in text.lower():
            body["stream"] = False
            body.pop("stream_options", None)
            return True
        return False

    def _check_status(self, response: httpx.Response, attempt: int) -> float | None:
        """Raise the right error for a failed response, or return a Retry-After hint to retry."""
        message = _error_message(response)
        code = response.status_code
        if _OVERFLOW.search(message) or _OVERFLOW.search(response.text):
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

    def _read(self, response: httpx.Response, tools: list[dict[str, Any]], relay: OnDelta,
              opened_think: bool) -> AssistantTurn:
        if "text/event-stream" in response.headers.get("content-type", ""):
            assembler = _StreamAssembler(relay)
            for event in _sse_events(response.iter_lines()):
                assembler.add(event)
            if not assembler.events:
                raise _EmptyStream
            return assembler.turn(tools, opened_think)
        response.read()
        try:
            data = response.json()
        except ValueError:
            raise EngineError(f"the model server sent a reply that is not JSON: {response.text[:200]!r}") from None
        turn = _turn_from_json(data, tools, opened_think)
        if turn.reasoning:
            relay("reasoning", turn.reasoning)
        if turn.content:
            relay("content", turn.content)
        return turn


class _EmptyStream(Exception):
    """A streamed reply that closed without a single event."""


class _StreamAssembler:
    """Accumulates streamed chunks into one turn: text deltas, tool-call fragments by index, usage."""

    def __init__(self, relay: OnDelta) -> None:
        self.relay = relay
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: dict[str, Any] = {}
        self.events = 0

    def add(self, event: dict[str, Any]) -> None:
        self.events += 1
        if "error" in event:
            message = _message_of(event["error"])
            if _OVERFLOW.search(message):
                raise ContextOverflow(f"the conversation does not fit the server's context: {message}")
            raise EngineError(f"the model server failed mid-reply: {message}")
        self.usage = event.get("usage") or self.usage
        if event.get("timings"):
            self.usage = {**self.usage, "timings": event["timings"]}
        for choice in event.get("choices") or []:
            self.finish = choice.get("finish_reason") or self.finish
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                self.reasoning.append(reasoning)
                self.relay("reasoning", reasoning)
            if delta.get("content"):
                self.content.append(delta["content"])
                self.relay("content", delta["content"])
            for fragment in delta.get("tool_calls") or []:
                self._add_call(fragment)

    def _add_call(self, fragment: dict[str, Any]) -> None:
        call = self.calls.setdefault(int(fragment.get("index", len(self.calls))), {"id": None, "name": "", "args": ""})
        call["id"] = call["id"] or fragment.get("id")
        function = fragment.get("function") or {}
        call["name"] += function.get("name") or ""
        arguments = function.get("arguments")
        call["args"] += arguments if isinstance(arguments, str) else json.dumps(arguments) if arguments else ""

    def turn(self, tools: list[dict[str, Any]], opened_think: bool) -> AssistantTurn:
        calls = [{"id": c["id"], "function": {"name": c["name"], "arguments": c["args"]}}
                 for _, c in sorted(self.calls.items())]
        message = {"content": "".join(self.content), "reasoning_content": "".join(self.reasoning) or None,
                   "tool_calls": calls}
        data = {"choices": [{"message": message, "finish_reason": self.finish}], "usage": self.usage}
        return _turn_from_json(data, tools, opened_think)


def _opened_think(body: dict[str, Any]) -> bool:
    """Whether the request asked the template to open a think block (Qwen3.5's generation prompt does)."""
    kwargs = body.get("chat_template_kwargs")
    return bool(kwargs.get("enable_thinking")) if isinstance(kwargs, dict) else False


def _sse_events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """`data:` payloads of a server-sent-event stream as dicts, up to `[DONE]`."""
    for line in lines:
        if not line.startswith("data:"):
            continue  # blank separators, comments (": ping"), `event:` lines
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        try:
            yield json.loads(payload)
        except json.JSONDecodeError:
            raise EngineError(f"the model server sent a malformed stream event: {payload[:200]!r}") from None


def _turn_from_json(data: dict[str, Any], tools: list[dict[str, Any]], opened_think: bool = False) -> AssistantTurn:
    """Build the turn from a (possibly re-assembled) chat-completion object.

    `opened_think`: the prompt opened `<think>`, so content holding `</think>` starts inside reasoning.
    """
    if "error" in data and not data.get("choices"):
        raise EngineError(f"the model server returned an error: {_message_of(data['error'])}")
    try:
        choice = data["choices"][0]
    except (KeyError, IndexError, TypeError):
        raise EngineError(f"the model server's reply has no choices: {json.dumps(data)[:200]}") from None
    message = choice.get("message") or {}
    content = message.get("content") or ""
    reasoning = message.get("reasoning_content") or message.get("reasoning") or None
    finish = "length" if choice.get("finish_reason") == "length" else "stop"
    usage = _usage(data.get("usage") or {})
    calls = [_tool_call(c, i) for i, c in enumerate(message.get("tool_calls") or [])]
    parse_error = None
    if not calls and any(marker in content for marker in _CALL_MARKUP):
        from leaf_cli.llm.parse import parse_reply  # the server did not parse calls: leaf's parser does

        # Only a closed block is reasoning: without `</think>` the server's template may not have opened one.
        in_reasoning = opened_think and reasoning is None and "</think>" in content
        parsed = parse_reply(content, tools, in_reasoning=in_reasoning)
        calls, parse_error = parsed.tool_calls, parsed.parse_error
        reasoning = reasoning or parsed.reasoning
        raw, content = content, parsed.content
    else:
        raw = content
    return AssistantTurn(content=content, reasoning=reasoning, tool_calls=calls, raw_text=raw,
                         finish_reason=finish, parse_error=parse_error, usage=usage)


def _tool_call(raw: dict[str, Any], index: int) -> ToolCall:
    function = raw.get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        from leaf_cli.llm.repair import loads_lenient

        arguments = loads_lenient(arguments) if arguments.strip() else {}
    # Malformed arguments become {} as in FrogNano's harness; the tool then reports the missing fields.
    return ToolCall(id=raw.get("id") or f"call_{index}", name=str(function.get("name") or ""),
                    arguments=arguments if isinstance(arguments, dict) else {})


def _usage(raw: dict[str, Any]) -> TurnUsage:
    """The server's counts; one it did not send stays None (unknown), never 0."""
    details = raw.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens")
    if cached is None:  # llama-server reports its prompt cache in `timings.cache_n`
        cached = (raw.get("timings") or {}).get("cache_n", 0)
    return TurnUsage(prompt_tokens=_count(raw.get("prompt_tokens")), cached_tokens=int(cached or 0),
                     completion_tokens=_count(raw.get("completion_tokens")))


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _error_message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return (response.text.strip() or response.reason_phrase)[:300]
    if isinstance(data, dict):
        return _message_of(data.get("error", data.get("detail", data)))[:300]
    return str(data)[:300]


def _message_of(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("msg") or json.dumps(error))
    if isinstance(error, list) and error:  # FastAPI validation errors: a list of {"loc", "msg"}
        return "; ".join(_message_of(e) for e in error)
    return str(error)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to exponential backoff
