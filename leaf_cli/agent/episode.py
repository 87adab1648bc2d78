"""`run_episode`: the one loop behind `leaf fix`, `leaf eval`, TaskPilot calibration and RL rollouts.

Ask the engine; run each tool call in order and append its result; a reply without tool calls is the final
answer. Limits are checked where FrogNano's harness checked them (its `agent.py`): turns and time before a
turn, a cut reply right after it (its tool calls are not run), the context after the turn's tools, their
output included. Every exit is an `EpisodeEnd` exception. leaf's own safeguards (`loop`, `format_error`
and its message) are switches in `Limits`, off by default; `Limits.with_safeguards()` turns them on.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, Field

from leaf_cli.agent import events as ev
from leaf_cli.agent.exits import (EpisodeEnd, ExitReason, FinalAnswer, LimitExceeded, Looping, RepeatedFormatError,
                                  engine_ending)
from leaf_cli.agent.prompt import FORMAT_ERROR_MESSAGE, SYSTEM_PROMPT
from leaf_cli.agent.context import TokenCounter
from leaf_cli.agent.secrets import Redactor
from leaf_cli.agent.trajectory import Trajectory, TrajectoryWriter, TurnRecord
from leaf_cli.llm.engine import Engine, EngineError, ReplayExhausted, Sampling
from leaf_cli.llm.messages import AssistantTurn, Conversation, Message, ToolCall
from leaf_cli.llm.progress import reporting_prefill
from leaf_cli.tools import TOOLS, Tool, ToolResult, Workspace, run_tool_call, tool_schemas

Gate = Callable[[ToolCall], "str | None"]
"""Asked before each tool call; returns None to allow it, or the reason it is refused (shown to the model)."""


class Limits(BaseModel):
    """When an episode stops if the model does not stop first.

    The defaults are FrogNano's loop exactly (its evaluation limits, no safeguard): what `leaf eval`,
    TaskPilot and RL run. `Limits.with_safeguards()` adds leaf's own for `leaf fix` and `leaf chat`.
    """

    max_turns: int = Field(100, description="Most assistant turns.")
    max_context: int = Field(65_536, description="The episode ends once the context (the last reply's prompt and "
                             "completion, plus the tool results appended after it) reaches this many tokens; 0: no limit.")
    max_seconds: float = Field(3_000.0, description="Wall-clock limit for the whole episode.")
    max_format_errors: int | None = Field(None, description="Safeguard: unparseable tool calls in a row before "
                                          "`format_error`. None (off): such a reply is the final answer, as in "
                                          "FrogNano's harness, whose server left the text as content.")
    format_error_message: bool = Field(False, description="With the format-error safeguard on, answer an "
                                       "unparseable call with a user message that says so (FORMAT_ERROR_MESSAGE); "
                                       "off, the model is simply asked again.")
    max_repeats: int | None = Field(None, description="Safeguard: identical tool calls in a row before `loop`. "
                                    "None: off.")

    @classmethod
    def with_safeguards(cls, **overrides: object) -> "Limits":
        """leaf's safeguards on (`leaf fix`, `leaf chat`): `loop` after 5 identical calls in a row,
        `format_error` after 3 unparseable ones, each answered by the format-error message."""
        return cls(**{"max_format_errors": 3, "format_error_message": True, "max_repeats": 5, **overrides})


@dataclass(frozen=True)
class EpisodeHooks:
    """What a caller plugs into an episode; each is optional, and name only the ones you use.

    `on_event` sees every event (the front ends render them); `gate` is asked before each tool call;
    `trajectory_path` receives the trajectory as it goes, with `redact`'s secrets masked (default: every
    secret of leaf's environment; pass one built with `--pass-env`); `patch_fn` takes the patch once the
    episode's Bash jobs have ended, whatever ended it.
    """

    on_event: ev.OnEvent | None = None
    gate: Gate | None = None
    trajectory_path: Path | None = None
    redact: Redactor | None = None
    patch_fn: Callable[[], str] | None = None


def run_episode(
    task: str,
    engine: Engine,
    workspace: Workspace,
    *,
    sampling: Sampling | None = None,
    limits: Limits | None = None,
    tools: tuple[Tool, ...] = TOOLS,
    system_prompt: str = SYSTEM_PROMPT,
    conversation: Conversation | None = None,
    final_tool: str | None = None,
    run_id: str | None = None,
    hooks: EpisodeHooks = EpisodeHooks(),
) -> Trajectory:
    """Run one episode and return its trajectory (also written to `hooks.trajectory_path` as it goes).

    Pass `conversation` to continue an earlier one: `task` is then appended as the next user message.
    `final_tool` names a tool whose call ends the episode (the R2E-style `finish`); by default a reply
    without tool calls ends it.
    """
    conv = conversation or Conversation(messages=[Message(role="system", content=system_prompt)])
    conv.append(Message(role="user", content=task))
    traj = Trajectory(
        run_id=run_id or uuid.uuid4().hex[:12], task=task, model=engine.name,
        workdir=str(workspace.root), tools=[t.name for t in tools], messages=conv.messages,
    )
    traj.messages = conv.messages  # share the list: pydantic copied it on validation, and the loop appends to conv
    writer = TrajectoryWriter(hooks.trajectory_path, traj, hooks.redact)
    loop = _Loop(engine, workspace, tools, sampling or Sampling(), limits or Limits(), hooks, final_tool)
    try:
        loop.run(conv, traj, writer)
    except EpisodeEnd as end:
        traj.exit_reason, traj.exit_message = end.reason.value, str(end)
    except KeyboardInterrupt:
        traj.exit_reason, traj.exit_message = ExitReason.INTERRUPTED.value, "interrupted by the user"
    finally:
        traj.wall_seconds = round(loop.elapsed(), 3)
        traj.token_log = conv.token_log
        workspace.end_episode()  # Bash jobs live across calls, not past the episode (before the patch is taken)
        if hooks.patch_fn is not None:
            traj.patch = hooks.patch_fn()
        writer.close(traj)
    return traj


class _Loop:
    def __init__(self, engine: Engine, workspace: Workspace, tools: tuple[Tool, ...], sampling: Sampling,
                 limits: Limits, hooks: EpisodeHooks, final_tool: str | None) -> None:
        self.engine, self.workspace, self.tools = engine, workspace, tools
        self.sampling, self.limits, self.gate = sampling, limits, hooks.gate
        self.emit: ev.OnEvent = hooks.on_event or (lambda _e: None)
        self.final_tool = final_tool.lower() if final_tool else None
        self.schemas = tool_schemas(tools)
        self.counter = TokenCounter(engine)
        self.format_errors = 0
        self.repeats: tuple[str, int] = ("", 0)
        self.started = time.monotonic()  # the episode's one clock: the time limits and `wall_seconds` read it

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def run(self, conv: Conversation, traj: Trajectory, writer: TrajectoryWriter) -> None:
        while True:
            self._check_limits(traj)
            index = len(traj.turns)
            self.emit(ev.TurnStarted(index))
            turn = self._ask(conv)
            conv.append(turn.to_message())
            traj.turns.append(TurnRecord(index=index, finish_reason=turn.finish_reason, usage=turn.usage,
                                         seconds=round(turn.seconds, 3), parse_error=turn.parse_error))
            self.emit(ev.TurnFinished(index, turn))
            writer.sync(traj)
            self._after_turn(turn, conv)
            writer.sync(traj)

    def _ask(self, conv: Conversation) -> AssistantTurn:
        """The engine boundary: an engine's failure leaves it as the episode's ending."""
        try:
            with reporting_prefill(lambda done, total: self.emit(ev.PrefillProgress(done, total))):
                return self.engine.complete(conv, self.schemas, self.sampling,
                                            lambda k, t: self.emit(ev.TextDelta(k, t)))
        except (EngineError, ReplayExhausted) as exc:
            raise engine_ending(exc) from exc

    def _after_turn(self, turn: AssistantTurn, conv: Conversation) -> None:
        if turn.finish_reason == "length":
            raise LimitExceeded(f"reply cut at {self.sampling.max_tokens} tokens", self._cut_reason(turn))
        if turn.parse_error and not turn.tool_calls and self.limits.max_format_errors is not None:
            self._format_error(turn.parse_error, conv)
            return
        self.format_errors = 0
        if not turn.tool_calls and self.final_tool is None:
            raise FinalAnswer("the model replied without a tool call")
        context = turn.usage.total or self.counter.messages(conv.messages)
        results = []
        for number, call in enumerate(turn.tool_calls):
            if number and self.elapsed() > self.limits.max_seconds:  # --max-time inside a turn too
                raise LimitExceeded(f"{self.limits.max_seconds:.0f} s", ExitReason.MAX_TIME)
            self._count_repeat(call)
            result = self._run_tool(call)
            message = Message(role="tool", content=result.text, tool_call_id=call.id, name=call.name)
            conv.append(message)
            results.append(message)
            if self.final_tool is not None and call.name.lower() == self.final_tool:
                raise FinalAnswer(f"the model called {call.name}")
        if not turn.tool_calls:
            conv.append(Message(role="user", content=f"Call the `{self.final_tool}` tool when you are done."))
        context += self.counter.tool_results(results)
        if self.limits.max_context > 0 and context >= self.limits.max_context:
            raise LimitExceeded(f"context of {context} tokens reached {self.limits.max_context}", ExitReason.MAX_CONTEXT)

    def _cut_reason(self, turn: AssistantTurn) -> ExitReason:
        """FrogNano's reading of a cut reply: one that also filled the context is `max_context`."""
        cap, limit = self.sampling.max_tokens, self.limits.max_context
        if turn.usage.known:
            if limit > 0 and turn.usage.total >= limit:  # type: ignore[operator]
                return ExitReason.MAX_CONTEXT
            if cap and turn.usage.completion_tokens >= cap:  # type: ignore[operator]
                return ExitReason.MAX_TOKENS
            return ExitReason.MAX_CONTEXT
        return ExitReason.MAX_TOKENS if cap else ExitReason.MAX_CONTEXT

    def _run_tool(self, call: ToolCall) -> ToolResult:
        self.emit(ev.ToolStarted(call))
        began = time.monotonic()
        refusal = self.gate(call) if self.gate is not None else None
        if refusal is not None:
            result = ToolResult(text=f"PermissionError: {refusal}", is_error=True)
        else:
            result = run_tool_call(call, self.workspace, self.tools)
        self.emit(ev.ToolFinished(call, result, time.monotonic() - began))
        return result

    def _format_error(self, detail: str, conv: Conversation) -> None:
        self.format_errors += 1
        self.emit(ev.FormatErrorNotice(detail))
        if self.format_errors >= (self.limits.max_format_errors or 0):
            raise RepeatedFormatError(f"{self.format_errors} unparseable tool calls in a row: {detail}")
        if self.limits.format_error_message:
            conv.append(Message(role="user", content=FORMAT_ERROR_MESSAGE.format(detail=detail)))

    def _count_repeat(self, call: ToolCall) -> None:
        if self.limits.max_repeats is None:
            return
        key = call.key()
        count = self.repeats[1] + 1 if self.repeats[0] == key else 1
        self.repeats = (key, count)
        if count >= self.limits.max_repeats:
            raise Looping(f"{call.name} called {count} times in a row with the same arguments")

    def _check_limits(self, traj: Trajectory) -> None:
        if len(traj.turns) >= self.limits.max_turns:
            raise LimitExceeded(f"{self.limits.max_turns} turns", ExitReason.MAX_TURNS)
        if self.elapsed() > self.limits.max_seconds:
            raise LimitExceeded(f"{self.limits.max_seconds:.0f} s", ExitReason.MAX_TIME)
