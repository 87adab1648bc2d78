"""The `leaf chat` prompt: prompt-toolkit with persistent history, multi-line input and slash-command completion.

Keys: Enter sends; Esc Enter (Alt-Enter in most terminals), Ctrl-J, or a trailing backslash before Enter start a
new line. Ctrl-C clears a non-empty prompt and raises KeyboardInterrupt on an empty one; Ctrl-D on an empty
prompt raises EOFError. What those mean is the caller's decision.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

COMMANDS: dict[str, str] = {
    "/diff": "show every change made since the chat began",
    "/undo": "put the repository back as it was before the chat (/undo --force: even if you edited files since)",
    "/help": "show this help",
    "/exit": "leave (the changes are reviewed first); /quit and Ctrl-D too",
    "/quit": "same as /exit",
}

KEYS_HELP = ("Enter sends · Esc Enter (Alt-Enter), Ctrl-J or a trailing \\ for a new line · "
             "Ctrl-C stops the agent's turn, twice at an empty prompt leaves · Ctrl-D leaves")

PROMPT = "› "


class SlashCompleter(Completer):
    """Completes the command names while the input is a single word starting with `/`."""

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or any(c.isspace() for c in text):
            return
        for name, meaning in COMMANDS.items():
            if name.startswith(text):
                yield Completion(name, start_position=-len(text), display_meta=meaning)


def _bindings() -> KeyBindings:
    keys = KeyBindings()

    @keys.add("enter")
    def _send(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.complete_state is not None and buffer.complete_state.current_completion is not None:
            buffer.apply_completion(buffer.complete_state.current_completion)
        elif buffer.document.text_before_cursor.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.newline(copy_margin=False)
        else:
            buffer.validate_and_handle()

    @keys.add("escape", "enter")
    @keys.add("c-j")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.newline(copy_margin=False)

    @keys.add("c-c")
    def _clear_or_interrupt(event: KeyPressEvent) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    return keys


class ChatInput:
    """Reads one message at a time; the history file keeps earlier messages across sessions."""

    def __init__(self, history_file: Path) -> None:
        history_file.parent.mkdir(parents=True, exist_ok=True)
        self.session: PromptSession[str] = PromptSession(
            history=FileHistory(str(history_file)), multiline=True, key_bindings=_bindings(),
            completer=SlashCompleter(), complete_while_typing=True, reserve_space_for_menu=len(COMMANDS),
            prompt_continuation=lambda *_: "  ")

    def read(self) -> str:
        """The next message (may span lines). KeyboardInterrupt: Ctrl-C on an empty prompt; EOFError: Ctrl-D."""
        return self.session.prompt(PROMPT)
