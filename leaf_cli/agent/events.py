"""What the loop reports as it runs. Front ends (rich live view, --json, eval progress) render these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from leaf_cli.llm.engine import DeltaKind
from leaf_cli.llm.messages import AssistantTurn, ToolCall
from leaf_cli.tools.base import ToolResult


@dataclass(frozen=True)
class TurnStarted:
    index: int


@dataclass(frozen=True)
class PrefillProgress:
    """The engine evaluated `done` of the `total` prompt tokens this turn needs (in-process engines only)."""

    done: int
    total: int


@dataclass(frozen=True)
class TextDelta:
    kind: DeltaKind
    text: str


@dataclass(frozen=True)
class TurnFinished:
    index: int
    turn: AssistantTurn


@dataclass(frozen=True)
class ToolStarted:
    call: ToolCall


@dataclass(frozen=True)
class ToolFinished:
    call: ToolCall
    result: ToolResult
    seconds: float


@dataclass(frozen=True)
class FormatErrorNotice:
    detail: str


Event = Union[TurnStarted, PrefillProgress, TextDelta, TurnFinished, ToolStarted, ToolFinished, FormatErrorNotice]
OnEvent = Callable[[Event], None]
