"""The wire protocol: schemas byte-identical to the harness's, name lookup, and how failures read."""

from __future__ import annotations

import json

from leaf_cli.llm.messages import ToolCall
from leaf_cli.tools import TOOLS, Workspace, run_tool_call, tool_schemas

# The harness's OPENAI_TOOLS parameters (FrogNano `frognano/harness/leaf/tools.py`): what the model was trained on.
HARNESS = {
    "Read": ("Read a text file. Returns numbered lines.", {
        "file_path": ("string", "Path to the file to read."),
        "offset": ("integer", "Optional 1-based starting line."),
        "limit": ("integer", "Optional maximum number of lines."),
    }, ["file_path"]),
    "Write": ("Write a complete file, creating parent directories when needed.", {
        "file_path": ("string", "Path to write."),
        "content": ("string", "Full file contents."),
    }, ["file_path", "content"]),
    "Edit": ("Replace an exact string in a text file.", {
        "file_path": ("string", "Path to edit."),
        "old_string": ("string", "Exact text to replace."),
        "new_string": ("string", "Replacement text."),
        "replace_all": ("boolean", "Replace every occurrence instead of requiring one match."),
    }, ["file_path", "old_string", "new_string"]),
    "Glob": ("Find files by glob pattern.", {
        "pattern": ("string", "Glob pattern, e.g. **/*.py."),
        "path": ("string", "Optional directory to search from."),
    }, ["pattern"]),
    "Bash": ("Run a shell command in the repository workdir.", {
        "command": ("string", "Command to run."),
        "description": ("string", "Short description of the command."),
        "timeout": ("number", "Optional timeout in seconds."),
    }, ["command"]),
}


def _harness_schema(name: str) -> dict:
    description, props, required = HARNESS[name]
    properties = {k: {"type": t, "description": d} for k, (t, d) in props.items()}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required}}}


def test_schemas_are_byte_identical_to_the_harness() -> None:
    # Key order matters: chat templates render the schema with tojson, which keeps insertion order.
    ours = [json.dumps(s) for s in tool_schemas()]
    assert ours == [json.dumps(_harness_schema(n)) for n in ("Read", "Write", "Edit", "Glob", "Bash")]


def test_tool_names_match_case_insensitively(call, ws: Workspace) -> None:
    (ws.root / "a.txt").write_text("x\n")
    for name in ("Read", "read", "READ", " rEaD "):
        assert call(name, file_path="a.txt") == "a.txt\n1. x"
    assert [t.name for t in TOOLS] == ["Read", "Write", "Edit", "Glob", "Bash"]


def test_unknown_tool(ws: Workspace) -> None:
    result = run_tool_call(ToolCall(id="1", name="Grep", arguments={}), ws)
    assert (result.text, result.is_error) == ("Unknown tool: Grep", True)


def test_bad_arguments_get_frognanos_messages(call, ws: Workspace) -> None:
    (ws.root / "a").write_text("x\n")
    assert call("Read") == "ValueError: file_path is required"
    assert call("Read", file_path="a", offset="ten") == "ValueError: invalid literal for int() with base 10: 'ten'"
    assert call("Edit", file_path="a") == "ValueError: old_string must be non-empty"
    assert call("Bash", command=None) == "ValueError: command is required"


def test_failures_read_as_type_colon_message(ws: Workspace) -> None:
    result = run_tool_call(ToolCall(id="1", name="Read", arguments={"file_path": "missing.py"}), ws)
    assert result.is_error
    assert result.text == f"FileNotFoundError: [Errno 2] No such file or directory: '{ws.root / 'missing.py'}'"


def test_lenient_arguments_like_the_harness(call, ws: Workspace) -> None:
    (ws.root / "a.txt").write_text("1\n2\n3\n")
    assert call("Read", path="a.txt") == "a.txt\n1. 1\n2. 2\n3. 3"  # `path` for `file_path`
    assert call("Read", file_path="a.txt", offset="2", limit="") == "a.txt\n2. 2\n3. 3"  # strings, "" = unset
    assert call("Read", file_path="a.txt", extra="ignored", limit=1.0) == "a.txt\n1. 1"
    assert call("Edit", file_path="a.txt", old_string="3", new_string="x", replace_all="true") == (
        "Edited a.txt (1 replacement).")
