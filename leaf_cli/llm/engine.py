"""The engine protocol: the only thing the episode loop knows about a model."""

from __future__ import annotations

from typing import Any, Callable, Literal, Protocol

from pydantic import BaseModel, Field

from leaf_cli.llm.messages import AssistantTurn, Conversation

DeltaKind = Literal["reasoning", "content"]
OnDelta = Callable[[DeltaKind, str], None]
"""Called with streamed text as it arrives, so front ends can show it live."""


class Sampling(BaseModel):
    """Decoding settings. Defaults are the ones FrogNano was evaluated with (DESIGN.md)."""

    temperature: float = Field(0.6, description="Softmax temperature; 0 means greedy.")
    top_p: float = Field(0.95, description="Nucleus sampling mass.")
    top_k: int = Field(20, description="Sample among the k most likely tokens (0 = all).")
    min_p: float = Field(0.0, description="Drop tokens below min_p times the top probability.")
    repeat_penalty: float = Field(1.0, description="1.0 = off, as FrogNano was evaluated.")
    max_tokens: int = Field(8192, description="Most tokens one assistant turn may generate.")
    enable_thinking: bool = Field(True, description="Open a <think> block in the generation prompt.")
    seed: int | None = Field(None, description="RNG seed for reproducible sampling, where the engine has one.")
    thinking_budget: int | None = Field(None, description="Most reasoning tokens before the in-process engine "
                                        "closes the reasoning with `</think>` and the reply goes on; None = no limit.")


class EngineError(Exception):
    """The engine failed (server unreachable, runtime crashed). Ends an episode with `engine_error`."""


class ContextOverflow(EngineError):
    """The conversation no longer fits the context window. Ends an episode with `max_context`."""


class Engine(Protocol):
    """A model behind the loop: llama.cpp in-process, an OpenAI-compatible server, or a replay script."""

    name: str
    context_limit: int

    def complete(
        self,
        conversation: Conversation,
        tools: list[dict[str, Any]],
        sampling: Sampling,
        on_delta: OnDelta | None = None,
    ) -> AssistantTurn:
        """Answer the conversation's last message. `tools` are OpenAI function schemas."""
        ...


class ReplayExhausted(Exception):
    """A replay script has no turns left. Ends an episode with `replay_exhausted`."""
