"""Helpers for driving `leaf fix` as a user would: replay scripts, CliRunner calls, real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from leaf_cli.cli.main import app


def script(path: Path, *turns: dict[str, Any]) -> str:
    """Write a replay script (one assistant turn per line) and return its `--model` spec."""
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return f"replay:{path}"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def turn(*calls: dict[str, Any], content: str = "", **extra: Any) -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls), **extra}


def leaf(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None) -> Any:
    """`leaf ARGS` through typer's CliRunner; stdout and stderr apart."""
    return CliRunner().invoke(app, list(args), input=input, env=env, catch_exceptions=False)


def fix_json(repo: Path, spec: str, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """`leaf fix --json`; stdout must hold exactly one JSON object and nothing else."""
    result = leaf("fix", "--json", "--workdir", str(repo), "--model", spec, *args, input=input, env=env)
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    return result.exit_code, json.loads(lines[0])


def leaf_process(*args: str, cwd: Path, env: dict[str, str] | None = None, **popen: Any) -> subprocess.Popen[bytes]:
    """`leaf ARGS` as a real child process (for signals and terminals)."""
    return subprocess.Popen([sys.executable, "-m", "leaf_cli", *args], cwd=cwd, env={**os.environ, **(env or {})}, **popen)
