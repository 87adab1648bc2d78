"""`leaf doctor`: one line per check with the fix; exit 0 when every required check passes, else 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from leaf_cli.cli.common import user_errors

_MARK = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


@user_errors
def doctor(
    model: Annotated[Optional[str],
                     typer.Option(help="Probe this model (name or .gguf) instead of the smallest on disk.", metavar="TEXT")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array of checks on stdout.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds the model probe may take.", metavar="N")] = 300.0,
) -> None:
    """Check llama.cpp, the CPU, a real model run (in a child process), models on disk, git and bubblewrap.

    Examples:

    \b
      leaf doctor
      leaf doctor --model smollm2-135m
    """
    from leaf_cli.models.doctor import run_checks
    from leaf_cli.models.resolve import model_path

    probe: Path | None = model_path(model)[0] if model else None
    checks = run_checks(probe_model=probe, probe_timeout=timeout)
    if as_json:
        typer.echo(json.dumps([c.model_dump() for c in checks], indent=2))
    else:
        for check in checks:
            line = f"{_MARK[check.status]}  {check.name:11} {check.detail}"
            if check.fix and check.status != "ok":
                line += f"\n      fix: {check.fix}"
            typer.echo(line)
    failed = [c.name for c in checks if c.required and c.status == "fail"]
    if not as_json:
        summary = f"{len(failed)} required check(s) failed: {', '.join(failed)}" if failed else ""
        typer.echo(summary or "all required checks passed")
    raise typer.Exit(1 if failed else 0)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
