"""Every observation text the five Leaf tools write, in one place, to be read beside FrogNano's harness.

Line for line these are the texts of `frognano/harness/leaf/tool_runner.py` (the model's training
environment); tests/tools/frognano_observations.json holds what that harness returned for 202 calls. The
system prompt and the format-error message are in leaf_cli/agent/prompt.py; the truncation marker is
`output.truncation_marker`. Anything else a tool shows is an OS or Python error, as `ExceptionType: message`.

Where leaf's observations differ from the harness's, on purpose (each with its test):
- Where the harness crashed, hung or lost data, leaf says what happened in the harness's `Type: message` form:
  a binary file the text tools leave alone (BINARY_FILE; the harness rewrote it with U+FFFD), a pipe or
  device (NOT_REGULAR; the harness blocked on it), a symlink loop under `**` (`OSError: [Errno 40] …`; the
  harness's glob hung), an infinite Bash timeout (the harness's pod call crashed), a Write without `content`
  (`content is required`; the harness emptied the file), a file tool's sandbox process that timed out or
  died (HOST_TIMEOUT, HOST_ENDED). Edit keeps a latin-1 file latin-1 (the harness wrote U+FFFD into it).
- A confined workspace (`leaf fix`, `leaf chat`) refuses a path outside the work tree (OUTSIDE,
  DOTDOT_AFTER_WILDCARD) and its Glob does not enter symlinked folders; the harness's container was its
  only boundary.
- Not differences any more: Glob on a spelled `.git` lists its files as the harness's glob did, confined too
  (broad patterns skip it as a dot name, as there); a name that is not UTF-8 shows as U+FFFD, as the harness's
  printed output reached the model (`output.as_shown`), while an OS error's name stays `\\udcff`-escaped, as
  `repr` wrote it there; Bash output that is not UTF-8 is the harness's `UnicodeDecodeError: …`.
- Not an observation but the reply parser's (llm/parse.py): a call whose `object` parameter holds no object is
  a format error, where the servers pass the text on to the tool.
"""

from __future__ import annotations

NO_FILES = "No files matched."
UNKNOWN_TOOL = "Unknown tool: {name}"
REQUIRED = "{key} is required"
OLD_STRING_EMPTY = "old_string must be non-empty"
OLD_STRING_NOT_FOUND = "old_string was not found"
OLD_STRING_MANY = "old_string matched {count} times; set replace_all=true or use a more specific old_string"


def wrote(shown: str, chars: int) -> str:
    return f"Wrote {shown} ({chars} bytes)."  # the harness counted characters and called them bytes


def edited(shown: str, count: int) -> str:
    return f"Edited {shown} ({count} replacement{'s' if count != 1 else ''})."


def more_files(count: int) -> str:
    return f"\n... {count} more files"


def exit_code(code: int) -> str:
    return f"Exit code: {code}"


def timed_out(seconds: float) -> str:
    return f"Timed out after {seconds:.1f}s"


def bash_layout(head: str, stdout: str, stderr: str) -> str:
    return f"{head}\nSTDOUT:\n{stdout}\nSTDERR:\n{stderr}"


BASH_FIXED = len(bash_layout("", "", ""))
"""The chars of the Bash layout around its head and the two streams."""


# leaf's own texts, each in the harness's `ExceptionType: message` form: where its harness crashed, hung or
# corrupted a file, and the refusals of a confined workspace (`leaf fix`; the permission layer's word).
OUTSIDE = "{path} is outside the working directory {root}"
GIT_WRITE = "writing inside .git ({path}) is not allowed: it could run code on the user's next git command"
DOTDOT_AFTER_WILDCARD = "{pattern}: '..' after a wildcard can leave the working directory"
BINARY_FILE = "{shown} is a binary file (NUL bytes in its first 8 KB); the text tools do not change it"
NOT_REGULAR = "not a regular file (a pipe, socket or device)"
HOST_TIMEOUT = "the file tool did not answer within {seconds:.1f}s (its sandbox process was ended; the next call starts a new one)"
HOST_ENDED = "the file tools' sandbox process ended{detail} (the next call starts a new one)"

# The permission gate's answer when the user says no to a call (the episode sends it as `PermissionError: ...`).
USER_DECLINED = "the user declined this {tool} call; do something else or finish with what you have"
USER_DECLINED_BECAUSE = "the user declined this {tool} call, saying: {reason}"
