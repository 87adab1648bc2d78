"""How an episode ends. Each non-final exit is an exception that carries its reason and message."""

from __future__ import annotations

from enum import Enum

from leaf_cli.llm.engine import ContextOverflow, EngineError, ReplayExhausted


class ExitReason(str, Enum):
    FINAL_ANSWER = "final_answer"
    MAX_TOKENS = "max_tokens"
    MAX_TURNS = "max_turns"
    MAX_CONTEXT = "max_context"
    MAX_TIME = "max_time"
    ENGINE_ERROR = "engine_error"
    FORMAT_ERROR = "format_error"
    LOOP = "loop"
    INTERRUPTED = "interrupted"
    REPLAY_EXHAUSTED = "replay_exhausted"


class EpisodeEnd(Exception):
    """Raised inside the loop to stop it; `run_episode` records `reason` and the message."""

    reason: ExitReason = ExitReason.FINAL_ANSWER

    def __init__(self, message: str = "", reason: ExitReason | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class FinalAnswer(EpisodeEnd):
    reason = ExitReason.FINAL_ANSWER


class LimitExceeded(EpisodeEnd):
    """max_tokens, max_turns, max_context or max_time: the reason says which."""


class RepeatedFormatError(EpisodeEnd):
    reason = ExitReason.FORMAT_ERROR


class Looping(EpisodeEnd):
    reason = ExitReason.LOOP


class EngineFailed(EpisodeEnd):
    """The engine failed (`engine_error`), or a replay script ran out (`replay_exhausted`)."""

    reason = ExitReason.ENGINE_ERROR


def engine_ending(exc: EngineError | ReplayExhausted) -> EpisodeEnd:
    """The ending an engine's failure gives the episode, with the engine's message: a context overflow is
    `max_context`, an exhausted replay script `replay_exhausted`, any other engine error `engine_error`."""
    if isinstance(exc, ContextOverflow):
        return LimitExceeded(str(exc), ExitReason.MAX_CONTEXT)
    if isinstance(exc, ReplayExhausted):
        return EngineFailed(str(exc), ExitReason.REPLAY_EXHAUSTED)
    return EngineFailed(str(exc))
