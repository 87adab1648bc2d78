"""Permission modes and the safety gate: a courtesy on top of the sandbox (leaf_cli/agent/sandbox.py).

The gate is what `run_episode(hooks=EpisodeHooks(gate=...))` calls before each tool call: None allows the
call, a string refuses it and goes back to the model as `PermissionError: <reason>`. The safety checks apply
in every mode; the mode only decides whether the user is asked (through a `confirm` callback the CLI supplies).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Literal, Union

from leaf_cli.llm.messages import ToolCall
from leaf_cli.tools import texts

Mode = Literal["ask", "auto-edit", "yolo"]
MODES: tuple[str, ...] = ("ask", "auto-edit", "yolo")


@dataclass(frozen=True)
class Declined:
    """No, with the user's short reason for the agent (it becomes the call's observation)."""

    reason: str


Answer = Union[Literal["yes", "no", "always"], Declined]
Confirm = Callable[[ToolCall], Answer]
"""Asks the user about one call: yes, no (maybe with a reason), or always (yes to every later call of the
same tool)."""

EDIT_TOOLS = frozenset({"write", "edit"})
PATH_KEYS = ("file_path", "path")
"""Every argument name the tools read a path from (the harness took `path` as an alias of `file_path`)."""
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "$(", "`", "{", "}", "\n", "|&"})
_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">|", "1>", "2>"})
_WRAPPERS = frozenset({"env", "command", "nohup", "time", "nice", "exec", "builtin", "xargs", "timeout", "stdbuf"})
_WRITERS = frozenset({"cp", "mv", "tee", "touch", "mkdir", "install", "ln", "rsync", "chmod", "chown", "chgrp",
                      "truncate", "shred", "rmdir", "unlink", "dd", "sed", "patch"})
_PIPE_TO_SHELL = re.compile(r"\b(curl|wget|fetch)\b[^;&\n]*\|\s*(sudo\s+)?(\S*/)?((ba|z|da|k|fi)?sh|python[\d.]*|perl|ruby|node)\b"
                            r"|\b(ba|z|da|k)?sh\s+<\(\s*(curl|wget)\b"
                            r"|\b((ba|z|da|k)?sh\s+-c|eval)\s+[\"']?\$\(\s*(curl|wget)\b")
_DELETE_WITH_SUBSTITUTION = re.compile(r"(^|[\s;&|(])(rm|find)\s[^;&|\n]*(`|\$\()")
_ALWAYS_REFUSED = {"sudo": "sudo is not allowed", "su": "su is not allowed", "mkfs": "formatting disks is not allowed",
                   "shutdown": "shutting the machine down is not allowed", "reboot": "rebooting is not allowed",
                   "poweroff": "powering off is not allowed", "halt": "halting the machine is not allowed"}


def needs_confirmation(mode: Mode, tool: str) -> bool:
    """ask: Bash and every write; auto-edit: Bash only; yolo: nothing."""
    name = tool.lower()
    if mode == "yolo":
        return False
    if mode == "auto-edit":
        return name == "bash"
    return name == "bash" or name in EDIT_TOOLS


def make_gate(mode: Mode, root: Path, confirm: Confirm | None = None,
              home: Path | None = None) -> Callable[[ToolCall], str | None]:
    """The gate for `run_episode`: the safety checks, then the user's answer where the mode asks for one.

    Without a `confirm` callback nothing is asked (there is no terminal), whatever the mode.
    """
    root = root.resolve()
    home = (home or Path.home()).resolve()
    always: set[str] = set()

    def gate(call: ToolCall) -> str | None:
        refusal = safety_refusal(call, root, home)
        if refusal is not None:
            return refusal
        name = call.name.lower()
        if confirm is None or not needs_confirmation(mode, name) or name in always:
            return None
        answer = confirm(call)
        if answer == "always":
            always.add(name)
            return None
        if answer == "yes":
            return None
        from leaf_cli.tools import texts

        if isinstance(answer, Declined):
            return texts.USER_DECLINED_BECAUSE.format(tool=call.name, reason=answer.reason)
        return texts.USER_DECLINED.format(tool=call.name)

    return gate


def safety_refusal(call: ToolCall, root: Path, home: Path) -> str | None:
    """Why this call must not run in any mode, or None. Checks Bash commands and Write/Edit targets.

    Every argument name a tool accepts for its path (Write's and Edit's `path` alias of `file_path` too) is
    checked, on the path as the tool reads it (`~` expanded, never `$HOME`: the tools expand no variables)
    and resolved (symlinks followed). The sandbox, and the tools' own walk beneath the work tree, are the
    boundary; this is a courtesy that explains a refusal to the model before they would fail the call. It
    never raises: a path that cannot be resolved (a symlink swapped while realpath reads it) is a refusal.
    """
    name = call.name.lower()
    try:
        if name == "bash":
            command = call.arguments.get("command")
            return bash_refusal(command, root, home) if isinstance(command, str) else None
        if name in EDIT_TOOLS:
            for key in PATH_KEYS:
                path = call.arguments.get(key)
                if isinstance(path, str) and path and _in_git_internals(_tool_path(path, root, home), root):
                    return texts.GIT_WRITE.format(path=path)
    except (ValueError, RuntimeError) as exc:  # a NUL byte in a path, `~nosuchuser`: refused, the run goes on
        return f"the call's arguments are not usable ({exc})"
    except OSError as exc:  # the file system changed under the check (a swapped symlink): refused, not a crash
        return f"the call's paths could not be checked ({type(exc).__name__}: {exc}); try the call again"
    return None


def bash_refusal(command: str, root: Path, home: Path) -> str | None:
    """Why this shell command reaches outside the workdir destructively, or None when it does not."""
    if _PIPE_TO_SHELL.search(command):
        return "piping a download into a shell is not allowed; download the file and read it first"
    if _DELETE_WITH_SUBSTITUTION.search(command):
        return "rm or find with a command substitution in its paths cannot be checked; spell the paths out"
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>`")
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError:
        return None  # unbalanced quotes: bash will refuse the command itself
    cwd = root
    for words in _simple_commands(tokens):
        refusal, cwd = _check_simple(words, cwd, root, home)
        if refusal is not None:
            return refusal
    return None


def _simple_commands(tokens: list[str]) -> list[list[str]]:
    """Split a token stream at ; && || | & ( ) and keep redirections as their own words."""
    commands, current = [], []
    for token in tokens:
        if token in _SEPARATORS or set(token) <= set(";&|()`") and token:
            if current:
                commands.append(current)
            current = []
        else:
            current.append(token)
    if current:
        commands.append(current)
    return commands


def _check_simple(words: list[str], cwd: Path, root: Path, home: Path) -> tuple[str | None, Path]:
    original = words
    words = _strip_prefixes(words)
    if not words:
        return None, cwd
    for i, word in enumerate(words[:-1]):
        if word in _REDIRECTS or (word.endswith(">") and word.rstrip(">").isdigit()):
            refusal = _write_refusal(words[i + 1], cwd, root, home)
            if refusal:
                return refusal, cwd
    argv = [w for i, w in enumerate(words) if w not in _REDIRECTS and (i == 0 or words[i - 1] not in _REDIRECTS)]
    if not argv:
        return None, cwd
    program = os.path.basename(argv[0])
    if program in ("cd", "pushd"):
        operands = [w for w in argv[1:] if not (w.startswith("-") and len(w) > 1)]
        target = operands[0] if operands else str(home)
        if "$" in target or "`" in target:
            return None, Path("/nonexistent-leaf-unknown")  # unknown folder: relative paths after it resolve outside
        return None, _resolve(target, cwd, home)
    if program in _ALWAYS_REFUSED or program.startswith("mkfs."):
        return _ALWAYS_REFUSED.get(program, "formatting disks is not allowed"), cwd
    if program in ("bash", "sh", "zsh", "dash") and "-c" in argv[1:-1]:
        return bash_refusal(argv[argv.index("-c") + 1], root, home), cwd
    if program == "eval":
        return bash_refusal(" ".join(argv[1:]), root, home), cwd
    if program == "git":
        return _git_refusal(argv, cwd, root, home), cwd
    if program == "rm" or program == "find":
        return _delete_refusal(program, argv, cwd, root, home, from_input=_via_xargs(original)), cwd
    if program in _WRITERS:
        return _writer_refusal(program, argv, cwd, root, home), cwd
    return None, cwd


def _via_xargs(words: list[str]) -> bool:
    return any(os.path.basename(w) in ("xargs", "parallel") for w in words[:3])


def _strip_prefixes(words: list[str]) -> list[str]:
    """Drop `VAR=value` assignments and wrappers such as env, nohup, timeout 10, xargs -0."""
    i = 0
    while i < len(words):
        word = words[i]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            i += 1
        elif os.path.basename(word) in _WRAPPERS:
            i += 1
            while i < len(words) and (words[i].startswith("-") or re.match(r"^[\d.]+[smhd]?$", words[i])):
                i += 1
        else:
            break
    return words[i:]


def _git_refusal(argv: list[str], cwd: Path, root: Path, home: Path) -> str | None:
    values = _git_option_values(argv)
    for i, word in enumerate(argv[:-1]):
        if word in ("-C", "--git-dir", "--work-tree") and not _inside(_resolve(argv[i + 1], cwd, home), root):
            return f"git {word} {argv[i + 1]} works on another repository; leaf's runs stay in {root}"
        if word == "-c" and argv[i + 1].lower().startswith("alias."):
            return "defining git aliases on the command line is not allowed; run the git command itself"
    if any(w.startswith(("--git-dir=", "--work-tree=")) for w in argv[1:]):
        return "git --git-dir/--work-tree is not allowed: run git inside the working directory"
    sub = next((w for w in argv[1:] if not w.startswith("-") and w not in values), None)
    if sub == "push":
        return "git push is not allowed: leaf leaves publishing to the user"
    if sub in ("send-email", "request-pull"):
        return f"git {sub} is not allowed"
    return None


def _git_option_values(argv: list[str]) -> set[str]:
    """Values of git's own options that take one (`git -C dir push`), so they are not taken for the subcommand."""
    return {argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("-C", "-c", "--git-dir", "--work-tree", "--namespace")}


def _delete_refusal(program: str, argv: list[str], cwd: Path, root: Path, home: Path,
                    from_input: bool = False) -> str | None:
    if program == "find":
        if not any(w in ("-delete", "-exec", "-execdir", "-ok") for w in argv):
            return None
        targets = []
        words = argv[1:]
        while words and words[0] in ("-H", "-L", "-P", "-O0", "-O1", "-O2", "-O3") or words and words[0].startswith("-D"):
            words = words[2:] if words[0] == "-D" else words[1:]
        for word in words:
            if word.startswith("-") or word in ("!", "("):
                break
            targets.append(word)
        targets = targets or ["."]
    else:
        targets = [w for w in argv[1:] if not w.startswith("-") or w == "-"]
    if from_input:
        return f"{program} with paths read from input (xargs) cannot be checked; name the paths inside the working directory"
    for target in targets:
        if "$" in target.replace("$HOME", "").replace("${HOME}", "").replace("$PWD", "").replace("${PWD}", "") \
                or "`" in target:
            return f"{program} of {target!r}: the path uses a variable or a command; spell it out inside the working directory"
        path = _resolve(_glob_base(target), cwd, home)
        if not _inside(path, root):
            return f"{program} of {target!r} reaches outside the working directory {root}; only delete inside it"
    return None  # inside the workdir even .git may go: leaf's checkpoint lives elsewhere


def _writer_refusal(program: str, argv: list[str], cwd: Path, root: Path, home: Path) -> str | None:
    args = [w for w in argv[1:] if not w.startswith("-")]
    if program == "dd":
        args = [w.split("=", 1)[1] for w in argv[1:] if w.startswith("of=")]
    elif program == "sed":
        if not any(w.startswith("-i") or w == "--in-place" for w in argv):
            return None
        args = args[1:]  # the first non-option word is the script
    elif program == "cp" or program == "install" or program == "ln":
        args = args[-1:]  # only the destination is written
    elif program in ("chmod", "chown", "chgrp"):
        args = args[1:]  # the mode or owner comes first
    for target in args:
        refusal = _write_refusal(target, cwd, root, home)
        if refusal:
            return f"{program}: {refusal}"
    return None


def _write_refusal(target: str, cwd: Path, root: Path, home: Path) -> str | None:
    """Writes may go inside the workdir, to /dev/null-like devices, or to scratch space outside the home folder."""
    if target.startswith("&") or target in ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"):
        return None
    path = _resolve(_glob_base(target), cwd, home)
    if _inside(path, root):
        if _in_git_internals(path, root) and ("hooks" in path.parts or path.name == "config"):
            return f"writing {target!r} inside .git could run code on the user's next git command"
        return None
    if _inside(path, home):
        return f"writing {target!r} reaches into the home folder outside the working directory"
    import tempfile

    if _inside(path, Path(tempfile.gettempdir()).resolve()):
        return None
    return f"writing {target!r} reaches outside the working directory {root}"


def _glob_base(target: str) -> str:
    """`/*` -> `/`, `src/*.py` -> `src`: the folder a glob could touch."""
    cut = min((target.find(c) for c in "*?[" if c in target), default=-1)
    if cut < 0:
        return target
    base = target[:cut]
    return base if base.endswith("/") or not base else os.path.dirname(base) or "."


def _resolve(path: str, cwd: Path, home: Path) -> Path:
    for var in ("${HOME}", "$HOME"):
        if path == var or path.startswith(var + "/"):
            path = str(home) + path[len(var):]
    if path == "~" or path.startswith("~/"):
        path = str(home) + path[1:]
    for var in ("${PWD}", "$PWD"):
        if path == var or path.startswith(var + "/"):
            path = str(cwd) + path[len(var):]
    candidate = Path(path) if os.path.isabs(path) else cwd / path
    return Path(os.path.realpath(candidate))


def _tool_path(path: str, root: Path, home: Path) -> Path:
    """Where a file tool's path argument leads, as Workspace.target reads it: `~` is the home, no variable
    is expanded (a folder named `$HOME` in the work tree is a folder), relative paths start at the root."""
    if path == "~" or path.startswith("~/"):
        path = str(home) + path[1:]
    elif path.startswith("~"):
        path = os.path.expanduser(path)
    candidate = Path(path) if os.path.isabs(path) else root / path
    return Path(os.path.realpath(candidate))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _in_git_internals(path: Path, root: Path) -> bool:
    return _inside(path, root / ".git")
