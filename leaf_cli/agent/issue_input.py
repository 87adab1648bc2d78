"""Where the task comes from: text, stdin (`gh issue view 123 | leaf fix -`), a file, or `--gh 123`.

Everything ends as one clean task text: the title, the body, the comments. `gh`'s plain output (tab
separated `key:\tvalue` header lines, a `--` line, the body, then one header + `--` + body per comment)
loses its empty metadata lines. AGENTS.md (or CLAUDE.md) at the repository root is appended after it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, BinaryIO

from leaf_cli.errors import LeafError

MAX_ISSUE_BYTES = 1_000_000
MAX_MEMORY_CHARS = 20_000
MEMORY_FILES = ("AGENTS.md", "CLAUDE.md")
_HEADER = re.compile(r"^([A-Za-z][A-Za-z _-]*):\t(.*)$")


def issue_from_bytes(data: bytes, source: str) -> str:
    """Validate raw issue input (size, binary, empty) and clean it up; LeafError says what is wrong."""
    if len(data) > MAX_ISSUE_BYTES:
        raise LeafError(f"the issue from {source} is {len(data):,} bytes; the limit is {MAX_ISSUE_BYTES:,} (1 MB)")
    if b"\0" in data:
        raise LeafError(f"the issue from {source} is binary data, not text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LeafError(f"the issue from {source} is not UTF-8 text") from None
    task = clean_issue(text.replace("\r\n", "\n"))
    if not task.strip():
        raise LeafError(f"the issue from {source} is empty; say what to fix")
    return task


def read_stdin(stream: BinaryIO, is_tty: bool) -> str:
    """`leaf fix -`: the issue from stdin, read up to just past the size limit (never blocks on a terminal)."""
    if is_tty:
        raise LeafError("`leaf fix -` reads the issue from stdin, but stdin is a terminal; pipe the issue in")
    return issue_from_bytes(stream.read(MAX_ISSUE_BYTES + 1), "stdin")


def read_issue_file(path: Path) -> str:
    if not path.is_file():
        raise LeafError(f"--issue-file {path} does not exist or is not a file")
    with path.open("rb") as f:
        return issue_from_bytes(f.read(MAX_ISSUE_BYTES + 1), str(path))


def clean_issue(text: str) -> str:
    """Turn `gh issue view`'s plain output into title + body + comments; other text is only trimmed."""
    blocks = _gh_blocks(text.strip("\n").split("\n"))
    if blocks is None:
        return text.strip()
    out: list[str] = []
    if "title" in blocks[0][0]:
        header, body = blocks.pop(0)
        out.append(f"# {header.pop('title')}")
        out += [f"{key}: {value}" for key, value in header.items() if value and key not in ("comments", "number")]
        out += ["", body.strip()] if body.strip() else []
    for meta, comment in blocks:  # `gh issue view --comments` prints one block per comment
        if comment.strip():
            out += ["", f"## Comment by {meta.get('author', 'someone')}", comment.strip()]
    return "\n".join(out).strip()


def _gh_blocks(lines: list[str]) -> list[tuple[dict[str, str], str]] | None:
    """Split gh output into (header, body) blocks: `key:\tvalue` lines, `--`, body up to a `--` that ends it.

    None when the text does not start like gh's output.
    """
    blocks: list[tuple[dict[str, str], str]] = []
    i = 0
    while i < len(lines):
        header: dict[str, str] = {}
        while i < len(lines) and (match := _HEADER.match(lines[i])):
            header[match.group(1).strip().lower()] = match.group(2).strip()
            i += 1
        if not header or i >= len(lines) or lines[i] != "--":
            return blocks or None
        i += 1
        start = i
        while i < len(lines) and not (lines[i] == "--" and (i + 1 >= len(lines) or _HEADER.match(lines[i + 1]))):
            i += 1
        blocks.append((header, "\n".join(lines[start:i])))
        i += 1  # the `--` closing a comment
    return blocks


def issue_from_gh(number: str, cwd: Path) -> str:
    """`--gh 123`: ask the GitHub CLI for the issue as JSON and clean it the same way."""
    exe = shutil.which("gh")
    if exe is None:
        raise LeafError("--gh needs the GitHub CLI (`gh`), which is not installed; install it or pipe the issue in")
    try:
        proc = subprocess.run([exe, "issue", "view", str(number), "--json", "title,body,comments"], cwd=cwd,
                              capture_output=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise LeafError(f"`gh issue view {number}` did not answer within 60 s") from None
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        raise LeafError(f"`gh issue view {number}` failed: {detail[-1] if detail else f'exit {proc.returncode}'}")
    try:
        data: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise LeafError(f"`gh issue view {number}` did not print JSON") from None
    return issue_from_bytes(_issue_json_to_text(data).encode(), f"gh issue {number}")


def _issue_json_to_text(data: dict[str, Any]) -> str:
    parts = [f"# {data.get('title', '').strip()}", "", str(data.get("body") or "").strip()]
    for comment in data.get("comments") or []:
        author = (comment.get("author") or {}).get("login", "someone")
        parts += ["", f"## Comment by {author}", str(comment.get("body") or "").strip()]
    return "\n".join(parts).strip()


def with_repo_memory(task: str, top: Path) -> str:
    """Append AGENTS.md (else CLAUDE.md) from the repository root, capped, as the ecosystem does.

    It goes into the task, never the system prompt, which stays byte-stable for the KV cache.
    """
    found = repo_memory(top)
    if found is None:
        return task
    name, text = found
    if len(text) > MAX_MEMORY_CHARS:
        text = text[:MAX_MEMORY_CHARS] + f"\n[{name} truncated at {MAX_MEMORY_CHARS} characters]"
    return f"{task}\n\n---\nRepository instructions from {name}:\n\n{text}"


def repo_memory(top: Path) -> tuple[str, str] | None:
    """(the file's name, its stripped text) for the first non-empty instructions file, else None."""
    for name in MEMORY_FILES:
        path = top / name
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            return (name, text) if text else None
    return None
