"""What the user sees and answers on a terminal: the diff, the review choice, permission prompts."""

from __future__ import annotations

import difflib
import re
from typing import Literal

from rich.console import Console
from rich.panel import Panel
from rich.prompt import Prompt
from rich.syntax import Syntax

from leaf_cli.agent.permissions import Answer, Declined
from leaf_cli.llm.messages import ToolCall
from leaf_cli.ui.live import tool_line
from leaf_cli.ui.safe_text import markup_safe, plain

Choice = Literal["keep", "undo", "commit", "branch"]
_KEYS = {"k": "keep", "u": "undo", "c": "commit", "b": "branch"}


_INDEX_LINE = re.compile(r"^index ([0-9a-f]{7,64})\.\.([0-9a-f]{7,64})", re.M)
_SHORT = 9
_REASON_CHARS = 300


def show_diff(console: Console, patch: str) -> None:
    """The run's patch with syntax highlighting (binary hunks shown as git prints them).

    The patch carries full object ids (`--full-index`, which `git apply` of a binary hunk needs); the
    screen shows them abbreviated, as `git diff` does.
    """
    if not patch.strip():
        console.print("[dim]No changes.[/dim]")
        return
    shown = _INDEX_LINE.sub(lambda m: f"index {m.group(1)[:_SHORT]}..{m.group(2)[:_SHORT]}", plain(patch))
    console.print(Syntax(shown, "diff", theme="ansi_dark", background_color="default", word_wrap=True))


def ask_review(console: Console) -> Choice:
    """keep / undo / commit / branch, one key each."""
    # `\\[` keeps rich from reading the key hints as markup (it would print "eep, ndo, ommit").
    answer = Prompt.ask("[bold]Keep the changes?[/bold] \\[k] yes, \\[u]ndo, \\[c]ommit, move to a \\[b]ranch",
                        console=console, choices=list(_KEYS), default="k", show_choices=False)
    return _KEYS[answer]  # type: ignore[return-value]


def ask_trust(top: object, keys: list[str]) -> bool:
    """Ask whether a repository's .leaf.toml may set these safety settings (remembered, for exactly these
    values, when yes)."""
    console = Console(stderr=True, highlight=False)
    console.print(f"[bold]{markup_safe(str(top))}/.leaf.toml sets {markup_safe(', '.join(keys))}[/bold], which loosen "
                  "or redirect leaf's safety. Trust these settings? (leaf asks again when they change)")
    return Prompt.ask("Trust it? \\[y]es, \\[n]o", console=console, choices=["y", "n"], default="n",
                      show_choices=False) == "y"


def ask_text(console: Console, label: str, default: str, *, multiline: bool = False) -> str:
    """Editable text prefilled with `default`: Enter accepts; with `multiline` (a commit message) Esc Enter
    starts a new line. Ctrl-C raises KeyboardInterrupt, Ctrl-D on an empty line EOFError."""
    from prompt_toolkit import prompt
    from prompt_toolkit.key_binding import KeyBindings

    keys = KeyBindings()
    if multiline:
        @keys.add("escape", "enter")  # later bindings win: this replaces prompt_toolkit's Meta-Enter "accept"
        def _newline(event) -> None:  # type: ignore[no-untyped-def]
            event.current_buffer.insert_text("\n")

    hint = "edit, then Enter; Esc Enter for a new line" if multiline else "edit, then Enter"
    console.print(f"[bold]{label}[/bold] [dim]({hint})[/dim]")
    return prompt("> ", default=default, multiline=False, key_bindings=keys)


def preview(call: ToolCall, before: str | None) -> str:
    """What a call would do: the command for Bash, a unified diff for Write and Edit."""
    name, args = call.name.lower(), call.arguments
    if name == "bash":
        return str(args.get("command", ""))
    if name == "edit" and before is not None:
        old, new = str(args.get("old_string", "")), str(args.get("new_string", ""))
        after = before.replace(old, new) if args.get("replace_all") else before.replace(old, new, 1)
        return _udiff(before, after, str(args.get("file_path")))
    if name == "write":
        return _udiff(before or "", str(args.get("content", "")), str(args.get("file_path")))
    return tool_line(call.name, args)


def ask_permission(console: Console, call: ToolCall, before: str | None) -> Answer:
    """Show the call's preview and ask: y(es) / n(o) / a(lways for this tool). After no, a short reason
    for the agent may follow (Enter skips it)."""
    text = preview(call, before)
    lexer = "bash" if call.name.lower() == "bash" else "diff"
    console.print(Panel(Syntax(plain(text), lexer, theme="ansi_dark", background_color="default", word_wrap=True),
                        title=markup_safe(tool_line(call.name, call.arguments, 60)), title_align="left"))
    name = markup_safe(call.name)
    answer = Prompt.ask(f"Allow {name}? \\[y]es, \\[n]o, \\[a]lways for {name}", console=console,
                        choices=["y", "n", "a"], default="y", show_choices=False)
    if answer != "n":
        return {"y": "yes", "a": "always"}[answer]  # type: ignore[return-value]
    reason = Prompt.ask("Why not? [dim](a short reason the agent reads; Enter to skip)[/dim]", console=console,
                        default="", show_default=False)
    return Declined(" ".join(plain(reason).split())[:_REASON_CHARS]) if reason.strip() else "no"


def _udiff(before: str, after: str, path: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 f"a/{path}", f"b/{path}")
    return "".join(lines) or "(no change)"
