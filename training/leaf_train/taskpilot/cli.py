"""`leaf train synth`: options -> SynthConfig -> the pipeline, with a live display and the funnel report.

`synth_command(...)` takes the options as keyword arguments (the lead wires it into `leaf train`);
`main(argv)` parses them itself for the pass-through stage command.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError

from leaf_cli.errors import LeafError


def synth_command(*, source: list[str] | None = None, generator: str | None = None, target: int | None = None,
                  policy: str | None = None, rollouts: int | None = None, band: str | None = None,
                  workers: int | None = None, out: Path | None = None, config: Path | None = None,
                  rounds: int | None = None, generator_url: str | None = None, generator_model: str | None = None,
                  tests: list[str] | None = None, sandbox: str | None = None, seed: int | None = None,
                  max_candidates: int | None = None, progress: bool | None = None, ray: str | None = None) -> int:
    """Run TaskPilot; returns the exit status (0: done, 1: fewer tasks than the target). Bad input raises
    LeafError (one line, exit 2 in the CLI)."""
    from leaf_train.taskpilot import pipeline, report
    from leaf_train.taskpilot.config import load_config
    from leaf_train.taskpilot.progress import StageProgress

    overrides = {"sources": source, "generator": generator, "target": target, "policy": policy, "rollouts": rollouts,
                 "band": band, "workers": workers, "out": out, "rounds": rounds, "generator_url": generator_url,
                 "generator_model": generator_model, "tests": tests, "sandbox": sandbox, "seed": seed,
                 "max_candidates": max_candidates}
    if config is not None and not config.is_file():
        raise LeafError(f"config file not found: {config}")
    try:
        cfg = load_config(config, overrides)
    except ValidationError as exc:
        raise LeafError("bad synth options: " + "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])) from None
    except ValueError as exc:
        raise LeafError(str(exc)) from None
    if ray:
        from leaf_cli.executor.config import from_flag

        cfg = cfg.model_copy(update={"executor": from_flag(ray, cfg.executor)})
    if not cfg.sources:
        raise LeafError("give at least one --source (a git repository, a git URL, pypi:NAME==VERSION or swebench:FILE)")
    from leaf_cli.executor import close_executors

    try:
        with StageProgress(cfg.target, enabled=progress) as display:
            pipeline.run(cfg, display.on_event)
    finally:
        close_executors()  # a `--ray local` cluster stops with the run
    result = report.write(cfg.out)
    print(report.text(result), file=sys.stderr)
    print(f"tasks: {cfg.out / 'tasks.jsonl'}  report: {cfg.out / 'report.txt'}  histogram: {cfg.out / 'phat_hist.png'}",
          file=sys.stderr)
    return 0 if result["funnel"]["in_band"] >= cfg.target else 1


app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@app.command()
def synth(
    source: Annotated[Optional[list[str]], typer.Option("--source", help="Snapshot spec (repeatable): PATH[@REV], URL[@REV], pypi:NAME==VERSION, swebench:FILE.")] = None,
    generator: Annotated[Optional[str], typer.Option(help="procedural | llm | combine.")] = None,
    target: Annotated[Optional[int], typer.Option(help="Stop after this many accepted tasks.")] = None,
    policy: Annotated[Optional[str], typer.Option(help="Policy spec: scripted:P0,..,P4 | replay:FILE | openai:MODEL@URL | llama:PATH.")] = None,
    rollouts: Annotated[Optional[int], typer.Option(help="N rollouts per candidate.")] = None,
    band: Annotated[Optional[str], typer.Option(help="LO,HI: the accepted p̂ band.")] = None,
    workers: Annotated[Optional[int], typer.Option(help="Candidates processed in parallel.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Run folder (resumes if it exists).")] = None,
    config: Annotated[Optional[Path], typer.Option(help="YAML config with the same options.")] = None,
    rounds: Annotated[Optional[int], typer.Option(help="R: most refinement rounds.")] = None,
    generator_url: Annotated[Optional[str], typer.Option(help="llm generator endpoint (…/v1).")] = None,
    generator_model: Annotated[Optional[str], typer.Option(help="llm generator model name.")] = None,
    tests: Annotated[Optional[list[str]], typer.Option("--tests", help="Restrict suites to these paths (repeatable).")] = None,
    sandbox: Annotated[Optional[str], typer.Option(help="bwrap | subprocess | docker.")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Seed for site order and the scripted policy.")] = None,
    max_candidates: Annotated[Optional[int], typer.Option(help="Stop after this many candidates.")] = None,
    ray: Annotated[Optional[str], typer.Option("--ray", metavar="ADDRESS", help=(
        "Run suites, validations and rollouts as Ray tasks: local, auto, ray://HOST:PORT or HOST:PORT."))] = None,
) -> None:
    """Synthesize executable tasks calibrated to the policy's learnable frontier."""
    try:
        code = synth_command(source=source, generator=generator, target=target, policy=policy, rollouts=rollouts,
                             band=band, workers=workers, out=out, config=config, rounds=rounds,
                             generator_url=generator_url, generator_model=generator_model, tests=tests,
                             sandbox=sandbox, seed=seed, max_candidates=max_candidates, ray=ray)
    except LeafError as exc:
        print(f"leaf: error: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    raise typer.Exit(code)


def main(argv: list[str]) -> int:
    """Entry point for `leaf train synth ARGS...`: returns the exit status."""
    try:
        code = app(args=argv, prog_name="leaf train synth", standalone_mode=False)
        return code if isinstance(code, int) else 0  # click returns typer.Exit's code in this mode
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        return int(exc.code or 0)
    except Exception as exc:  # click usage errors in non-standalone mode
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            return exc.exit_code
        raise
