"""The wire types every part of leaf shares: chat messages, tool calls, an engine's reply.

Messages are OpenAI-style chat messages, the shape FrogNano's harness spoke and the shape `--json` prints.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One call the model asked for. `arguments` is already a dict (templates iterate it)."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }

    def key(self) -> str:
        """A stable identity for loop detection: same tool, same arguments."""
        return self.name.lower() + json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)


class Message(BaseModel):
    """One chat message. `reasoning_content` is kept and echoed back (FrogNano keeps reasoning in history)."""

    role: Role
    content: str = ""
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.reasoning_content:
            out["reasoning_content"] = self.reasoning_content
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out

    def to_template(self) -> dict[str, Any]:
        """The dict a Jinja chat template expects: arguments as dicts, not JSON strings."""
        out = self.to_openai()
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return out


FinishReason = Literal["stop", "length", "error"]


class TurnUsage(BaseModel):
    """Token accounting for one assistant turn. `cached_tokens`: prompt tokens not evaluated again.

    None means unknown: a server that returns no usage (llama_cpp.server when streaming) is never read as 0.
    """

    prompt_tokens: int | None = None
    cached_tokens: int = 0
    completion_tokens: int | None = None

    @property
    def known(self) -> bool:
        return self.prompt_tokens is not None and self.completion_tokens is not None

    @property
    def total(self) -> int | None:
        """prompt + completion, or None when either is unknown."""
        return self.prompt_tokens + self.completion_tokens if self.known else None  # type: ignore[operator]


class AssistantTurn(BaseModel):
    """What an engine returns for one call.

    `parse_error` is set when the reply looks like a tool call that could not be parsed; the loop answers it
    with a format-error message instead of ending the episode.
    """

    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    raw_text: str = ""
    finish_reason: FinishReason = "stop"
    parse_error: str | None = None
    usage: TurnUsage = Field(default_factory=TurnUsage)
    seconds: float = 0.0
    # Token-level engines only: what was sampled, with the behaviour policy's log-probabilities.
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None

    def to_message(self) -> Message:
        return Message(
            role="assistant", content=self.content, reasoning_content=self.reasoning, tool_calls=self.tool_calls
        )


class TokenLog(BaseModel):
    """The append-only token history of a conversation on a token-level engine.

    `mask[i]` is 1 exactly on tokens the policy sampled; `logprobs[i]` is the behaviour log-probability of a
    sampled token (0.0 elsewhere); `versions[i]` the policy version that sampled it (-1 elsewhere). RL reads
    this log as is: nothing is ever re-tokenized.
    """

    ids: list[int] = Field(default_factory=list)
    mask: list[int] = Field(default_factory=list)
    logprobs: list[float] = Field(default_factory=list)
    versions: list[int] = Field(default_factory=list)
    superseded: list["TokenLog"] = Field(default_factory=list)
    """Earlier logs replaced by a canonical re-render (`rebased`), each as the model saw it: RL can still
    train on turns sampled before a user message rewrote the history."""

    def append_prompt(self, ids: list[int]) -> None:
        self.ids += ids
        self.mask += [0] * len(ids)
        self.logprobs += [0.0] * len(ids)
        self.versions += [-1] * len(ids)

    def append_sampled(self, ids: list[int], logprobs: list[float], version: int = 0,
                       forced: frozenset[int] = frozenset()) -> None:
        """Append a reply. `forced`: indexes of tokens leaf wrote itself (a thinking budget's `</think>`),
        kept as prompt tokens (mask 0), since the policy did not sample them."""
        if len(ids) != len(logprobs):
            raise ValueError(f"{len(ids)} sampled tokens but {len(logprobs)} log-probabilities")
        self.ids += ids
        self.mask += [0 if i in forced else 1 for i in range(len(ids))]
        self.logprobs += [0.0 if i in forced else lp for i, lp in enumerate(logprobs)]
        self.versions += [-1 if i in forced else version for i in range(len(ids))]

    def rebased(self, ids: list[int]) -> "TokenLog":
        """A log holding `ids` (a canonical rendering): this log's tokens, masks and log-probabilities up to
        the first differing token, prompt tokens after it. This log joins `superseded` when it loses any."""
        keep = 0
        for a, b in zip(self.ids, ids):
            if a != b:
                break
            keep += 1
        lost = keep < len(self.ids) and any(self.mask[keep:])
        earlier = [*self.superseded, self.model_copy(update={"superseded": []})] if lost else list(self.superseded)
        out = TokenLog(ids=self.ids[:keep], mask=self.mask[:keep], logprobs=self.logprobs[:keep],
                       versions=self.versions[:keep], superseded=earlier)
        out.append_prompt(ids[keep:])
        return out


class Conversation(BaseModel):
    """The append-only message list, plus the token log a token-level engine keeps beside it.

    Engines own `token_log` (None until a token-level engine first sees the conversation) and
    `rendered_messages`, the number of messages already in the token log.
    """

    messages: list[Message] = Field(default_factory=list)
    token_log: TokenLog | None = None
    rendered_messages: int = 0

    def append(self, message: Message) -> None:
        self.messages.append(message)
