"""`leaf chat`: an interactive session over the same agent loop as `leaf fix`, one conversation, one run.

Each message is one `run_episode` continuing the same in-process `Conversation`, so the llama.cpp engine
keeps its token log and evaluates only the new text. The repository is checkpointed before the first
message and the whole chat is one run for `leaf undo`; leaving offers the same review as `leaf fix`.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from leaf_cli.cli import options as opt
from leaf_cli.cli.common import user_errors

if TYPE_CHECKING:  # types only: `leaf --help` imports this module, and must not import the agent or rich
    from collections.abc import Callable
    from types import FrameType

    from rich.console import Console

    from leaf_cli.agent.trajectory import Trajectory
    from leaf_cli.config import Settings
    from leaf_cli.llm.engine import Engine
    from leaf_cli.llm.messages import Conversation
    from leaf_cli.repo.runs import RunRecord
    from leaf_cli.ui.live import LiveView

    Review = Callable[[Console, RunRecord, str, str, str], str]


def register(app: typer.Typer) -> None:
    app.command("chat")(chat)


@user_errors
def chat(
    workdir: opt.Workdir = None,
    model: opt.Model = None,
    base_url: opt.BaseUrl = None,
    max_turns: Annotated[Optional[int], typer.Option("--max-turns", min=1, help="Most assistant turns per message.", metavar="N")] = None,
    max_time: Annotated[Optional[float], typer.Option("--max-time", min=1, help="Wall-clock limit per message, seconds.", metavar="N")] = None,
    n_ctx: opt.NCtx = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Never ask: yolo mode, keep the changes on exit.")] = False,
    mode: opt.Mode = None,
    sandbox: opt.Sandbox = None,
    network: opt.Network = None,
    pass_env: opt.PassEnv = None,
    quiet: opt.Quiet = None,
    constrain_tools: opt.ConstrainTools = None,
    temperature: opt.Temperature = None,
    seed: opt.Seed = None,
    thinking_budget: opt.ThinkingBudget = None,
    max_tokens: opt.MaxTokens = None,
    kv_cache: opt.KvCache = None,
    prefix_cache: opt.PrefixCache = None,
    speculate: opt.Speculate = None,
) -> None:
    """Talk to the agent in this git repository; each message runs it until its answer.

    Enter sends; Esc Enter (Alt-Enter), Ctrl-J or a trailing backslash start a new line. Ctrl-C stops the
    running turn and keeps the conversation; Ctrl-C twice at an empty prompt, Ctrl-D or /exit leave.
    /diff shows the changes, /undo restores the start state, /help lists the commands. The conversation stays
    in this process, so the llama.cpp engine reuses its token cache from message to message. The whole chat
    is one run: `leaf undo` takes it back and `leaf fix --continue` continues it.

    Examples:

    \b
      leaf chat
      leaf chat --model smollm2-135m --mode auto-edit
      leaf chat --base-url http://127.0.0.1:8080/v1 --model qwen3.5-4b
    """
    from leaf_cli.cli.fix_session import make_engine_for
    from leaf_cli.config import load_settings
    from leaf_cli.errors import LeafError
    from leaf_cli.repo.lifecycle import ensure_git_work_tree

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise LeafError('leaf chat needs a terminal; in scripts use leaf fix "..." and leaf fix --continue "..."')
    root = (workdir or Path.cwd()).expanduser().resolve()
    top = ensure_git_work_tree(root)
    flags = {"model": model, "base_url": base_url, "max_turns": max_turns, "max_time": max_time, "n_ctx": n_ctx,
             "mode": mode, "sandbox": sandbox, "network": network, "pass_env": pass_env, "quiet": quiet, "constrain_tools": constrain_tools,
             "temperature": temperature, "seed": seed, "thinking_budget": thinking_budget,
             "max_tokens": max_tokens, "kv_cache": kv_cache, "prefix_cache": prefix_cache, "speculate": speculate}
    from leaf_cli.ui.review import ask_trust

    settings, _origins = load_settings(flags, top, ask_trust)
    from rich.console import Console

    from leaf_cli.ui.live import phase, shorten

    loading = f"loading the model {shorten(settings.model, 60, path=True)}"
    with phase(Console(stderr=True), loading, show=not settings.quiet):  # a 4B GGUF takes seconds to map
        engine = make_engine_for(settings, yes=yes)
    _sigterm_as_exit()
    session = ChatSession(root, top, settings, engine, yes=yes)
    session.loop()
    raise typer.Exit(0)


UNDONE_NOTE = "(Note: the user undid every change made so far in this chat; the files are back as they were.)"
"""Put before the next message after /undo, so the model does not build on edits that are gone."""


class _CurrentView:
    """Whichever live view is showing the message in progress: the permission prompt pauses it."""

    def __init__(self) -> None:
        self.view: LiveView | None = None

    def pause(self) -> None:
        if self.view is not None:
            self.view.pause()


class ChatSession:
    """One conversation, one run record, one permission gate (an "always" answer holds for the whole chat)."""

    def __init__(self, root: Path, top: Path, settings: Settings, engine: Engine, *, yes: bool) -> None:
        from rich.console import Console

        from leaf_cli.agent.permissions import make_gate
        from leaf_cli.agent.prompt import SYSTEM_PROMPT
        from leaf_cli.cli.fix_session import agent_workspace, confirm_prompt, open_agent_sandbox
        from leaf_cli.llm.messages import Conversation, Message

        self.root, self.top, self.settings, self.engine, self.yes = root, top, settings, engine, yes
        self.console = Console(stderr=True, highlight=False)
        self.current = _CurrentView()
        self.mode = "yolo" if yes else (settings.mode or "ask")
        self.gate = make_gate(self.mode, root, None if yes else confirm_prompt(self.console, self.current, root))
        self.sandbox = open_agent_sandbox(settings, top, root)
        self.workspace = agent_workspace(settings, self.sandbox, root)
        self.conversation = Conversation(messages=[Message(role="system", content=SYSTEM_PROMPT)])
        self.run: RunRecord | None = None
        self.episodes = 0
        self.first_task = self.last_answer = ""
        self.undone = False

    def loop(self) -> None:
        """Read and handle messages until the user leaves, then review the chat's changes.

        Outside the agent's turn Ctrl-C is a key the prompt reads, never a signal: a press between two prompts
        (or while a command prints) is dropped instead of landing in the middle of the chat's bookkeeping.
        """
        with _sigint_held():
            self._read_loop()
        self.close()

    def _read_loop(self) -> None:
        from leaf_cli.repo.runs import state_root
        from leaf_cli.ui.chat_input import KEYS_HELP, ChatInput

        reader = ChatInput(state_root() / "chat_history")
        self.console.print(f"[bold]leaf chat[/bold] [dim]· {self.engine.name} · {self.mode} mode · {self.top}[/dim]")
        self.console.print(f"[dim]{KEYS_HELP} · /help[/dim]")
        armed = False
        while True:
            try:
                text = reader.read()
            except KeyboardInterrupt:  # only raised on an empty prompt
                if armed:
                    break
                armed = True
                self.console.print("[dim](Ctrl-C again or Ctrl-D to leave)[/dim]")
                continue
            except EOFError:
                break
            armed = False
            if _command_word(text) is not None:
                if not self.command(text):
                    break
            elif text.strip():
                self.send(text)

    def command(self, text: str) -> bool:
        """Carry out a slash command; False means leave."""
        from leaf_cli.errors import LeafError
        from leaf_cli.repo.lifecycle import run_patch, undo_run
        from leaf_cli.ui.chat_input import COMMANDS, KEYS_HELP
        from leaf_cli.ui.review import show_diff

        word, rest = _command_word(text), text.strip().split()[1:]
        if word in ("/exit", "/quit"):
            return False
        if word == "/help":
            for name, meaning in COMMANDS.items():
                self.console.print(f"  [bold]{name:<6}[/bold] {meaning}")
            self.console.print(f"[dim]{KEYS_HELP}[/dim]")
        elif word == "/diff":
            show_diff(self.console, run_patch(self.run) if self.run is not None else "")
        elif word == "/undo":
            if self.run is None or not run_patch(self.run).strip():
                self.console.print("[dim]Nothing to undo.[/dim]")
                return True
            try:
                done = undo_run(self.run, force=rest == ["--force"])
            except LeafError as exc:
                self.console.print(f"[red]{exc}[/red] [dim](/undo --force here)[/dim]")
                return True
            from leaf_cli.cli.runs import undo_details
            from leaf_cli.ui.safe_text import markup_safe

            for line in undo_details(done):
                self.console.print(f"[dim]{markup_safe(line)}[/dim]")
            self.undone = True
            self.console.print("Undone: the repository is as it was before the chat.")
        else:
            self.console.print(f"[red]unknown command {word}[/red]; /help lists them")
        return True

    def send(self, text: str) -> None:
        """Run the agent on one message, continuing the conversation."""
        from leaf_cli.agent import EpisodeHooks, Limits, run_episode
        from leaf_cli.agent.issue_input import repo_memory, with_repo_memory
        from leaf_cli.cli.fix_session import sampling_for_model
        from leaf_cli.repo import lifecycle
        from leaf_cli.ui.live import LiveView, memory_note

        if self.run is None:
            with _sigint_held():  # a half-written checkpoint would be worse than a late Ctrl-C
                title = text.strip().splitlines()[0][:100]
                self.run = lifecycle.begin_run(self.root, title=title, model=self.engine.name)
            self.first_task = text
            text = with_repo_memory(text, self.top)
            if not self.settings.quiet:
                found = repo_memory(self.top)
                memory_note(self.console, found[0] if found else None)
        run = self.run
        if self.undone:
            text = f"{UNDONE_NOTE}\n\n{text}"
            self.undone = False
        self.episodes += 1
        path = self.run.folder / f"chat-{self.episodes:03d}.jsonl"
        self.run.trajectory = str(path)
        self.run.save()
        context = getattr(self.engine, "context_limit", 0) or 0
        view = LiveView(self.console, quiet=self.settings.quiet, context_limit=context)  # its live line shows each phase
        self.current.view = view
        limits = Limits.with_safeguards(max_turns=self.settings.max_turns, max_seconds=self.settings.max_time)
        sampling = sampling_for_model(self.settings)
        from leaf_cli.agent.reaper import Reaper
        from leaf_cli.agent.secrets import Redactor
        from leaf_cli.cli.fix_session import hook_episode_end

        traj = None
        self.sandbox.ensure_started()
        reaper = Reaper.for_sandbox(self.sandbox)
        hook_episode_end(self.workspace, reaper, self.sandbox)
        try:
            with _sigint_live():  # Ctrl-C stops the turn: the tool's group is killed, the episode ends `interrupted`
                traj = run_episode(text, self.engine, self.workspace, limits=limits, sampling=sampling,
                                   conversation=self.conversation, run_id=self.run.run_id,
                                   hooks=EpisodeHooks(on_event=view, gate=self.gate, trajectory_path=path,
                                                      redact=Redactor(os.environ, self.settings.pass_env),
                                                      patch_fn=lambda: lifecycle.run_patch(run)))
        except KeyboardInterrupt:
            pass  # it landed after the loop's own handler, while the trajectory was being closed
        finally:
            reaper.stop()
            self.sandbox.end_episode()  # the message's background jobs end with its episode
            view.pause()
            with _sigint_held():
                settle(self.conversation)
                reason = (traj.exit_reason if traj is not None else None) or "interrupted"
                lifecycle.finish_run(self.run, reason)
        self._report(traj, reason)

    def _report(self, traj: Trajectory | None, reason: str) -> None:
        from leaf_cli.ui.live import summary

        run = self.run
        if traj is None:
            self.console.print(f"[yellow]● {reason}[/yellow]")
            return
        assert run is not None  # send() began the run before the episode that made `traj`
        self.last_answer = traj.final_answer() or self.last_answer
        summary(self.console, turns=len(traj.turns), usage=traj.usage(), seconds=traj.wall_seconds, exit_reason=reason,
                files_changed=run.files_changed, insertions=run.insertions, deletions=run.deletions, run_id=run.run_id)
        if traj.exit_message and reason != "final_answer":
            self.console.print(f"[dim]{traj.exit_message}[/dim]")

    def close(self) -> None:
        """On leaving: review the chat's changes as `leaf fix` does, unless the user changed files since."""
        from leaf_cli.cli.fix_review import review
        from leaf_cli.repo.lifecycle import changed_since, run_patch

        from leaf_cli.repo.lifecycle import release_run

        self.sandbox.close()
        run = self.run
        try:
            self._review_on_leave(run, review, changed_since, run_patch)
        finally:
            if run is not None:
                release_run(run)

    def _review_on_leave(self, run: RunRecord | None, review: Review, changed_since: Callable[[RunRecord], list[str]],
                         run_patch: Callable[[RunRecord], str]) -> None:
        if run is None or run.status == "undone" or not run_patch(run).strip():
            return
        problems = changed_since(run)
        if self.yes or problems:
            why = f" ({'; '.join(problems)})" if problems else ""
            self.console.print(f"Kept{why}. [dim]`leaf undo {run.run_id}` restores the state before the chat.[/dim]")
            return
        try:
            review(self.console, run, run_patch(run), self.last_answer, self.first_task)
        except (KeyboardInterrupt, EOFError):
            self.console.print(f"\nKept. [dim]`leaf undo {run.run_id}` takes it back.[/dim]")


def settle(conversation: Conversation) -> None:
    """Make the conversation continuable after an interrupted turn.

    A tool call cut off by Ctrl-C gets a result saying so (every engine wants a result per call), and a
    token log that no longer ends with the sampled tokens of the last assistant message covered (the
    interrupt landed inside the engine's bookkeeping) is dropped: the llama.cpp engine then renders the
    conversation afresh once instead of appending to a log that does not match the messages.
    """
    from leaf_cli.llm.messages import Message

    messages = conversation.messages
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"), None)
    if last is not None:
        answered = {m.tool_call_id for m in messages[last + 1:] if m.role == "tool"}
        for call in messages[last].tool_calls:
            if call.id not in answered:
                conversation.append(Message(role="tool", content="KeyboardInterrupt: the user stopped this call",
                                            tool_call_id=call.id, name=call.name))
    log, covered = conversation.token_log, conversation.rendered_messages
    if log is not None and not (1 <= covered <= len(messages) and messages[covered - 1].role == "assistant"
                                and log.mask and log.mask[-1] == 1):
        conversation.token_log, conversation.rendered_messages = None, 0


def _command_word(text: str) -> str | None:
    """`/diff` for "/diff", None for a message (a path such as "/usr/bin is missing" is a message)."""
    words = text.strip().split()
    word = words[0] if words else ""
    return word if len(word) > 1 and word.startswith("/") and word[1:].isalpha() else None


class _sigint_held:
    """Ignore Ctrl-C for the duration (checkpoint and run-record writes must not be cut in half)."""

    def __enter__(self) -> None:
        self.previous = signal.signal(signal.SIGINT, signal.SIG_IGN)

    def __exit__(self, *_exc: object) -> None:
        signal.signal(signal.SIGINT, self.previous)


class _sigint_live:
    """Ctrl-C raises KeyboardInterrupt for the duration (Python's default), whatever the handler around it."""

    def __enter__(self) -> None:
        self.previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def __exit__(self, *_exc: object) -> None:
        signal.signal(signal.SIGINT, self.previous)


def _sigterm_as_exit() -> None:
    """SIGTERM leaves the chat through the normal path: the tool's process group dies, the run is recorded."""

    def handler(_signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(143)

    if os.name == "posix":
        signal.signal(signal.SIGTERM, handler)
