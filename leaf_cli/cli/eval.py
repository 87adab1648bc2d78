"""`leaf eval run | grade | compare`: run and grade attempts on a task file. Parsing and printing only;
the work is in `leaf_cli.tasks`. Progress and tables go to stderr (rich); stdout gets the summary path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Callable, Optional

import typer

from leaf_cli.cli.common import fail, user_errors
from leaf_cli.errors import LeafError

if TYPE_CHECKING:
    from leaf_cli.llm.engine import Engine
    from leaf_cli.tasks import Task

eval_app = typer.Typer(help="Evaluate a model on a task file (SWE-bench format) and grade patches.",
                       no_args_is_help=True)

TasksArg = Annotated[Path, typer.Argument(help="Task file, one SWE-bench-style task per JSON line.")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output folder (predictions, results, summary).")]
WorkersOpt = Annotated[int, typer.Option("--workers", "-j", min=1, help="Attempts run in parallel.")]
SandboxOpt = Annotated[Optional[str], typer.Option(help="subprocess, bwrap or docker (default: bwrap if installed).")]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Keep finished attempts in --out and run the rest.")]


def register(app: typer.Typer) -> None:
    """Attach `leaf eval` (and the importers, where that module exists)."""
    try:
        from leaf_cli.cli.eval_extras import register_extras
    except ModuleNotFoundError as exc:
        if exc.name != "leaf_cli.cli.eval_extras":
            raise
    else:
        register_extras(eval_app)
    app.add_typer(eval_app, name="eval")


def _engine_factory(spec: str) -> Callable[[], "Engine"]:
    """A function making a fresh engine per attempt: `leaf_cli.models.resolve.make_engine` when present,
    else `replay:PATH` through the replay engine. The spec is checked once, here."""
    try:
        from leaf_cli.models.resolve import make_engine
    except ModuleNotFoundError as exc:
        if exc.name != "leaf_cli.models.resolve":
            raise
        if not spec.startswith("replay:"):
            raise LeafError(f"model {spec!r}: only replay:PATH specs work until leaf_cli.models.resolve exists") from None
        from leaf_cli.llm.replay import ReplayEngine

        path = Path(spec[len("replay:"):]).expanduser()
        ReplayEngine.from_file(path)
        return lambda: ReplayEngine.from_file(path)
    make_engine(spec)  # fail fast on a bad spec, before any attempt starts
    return lambda: make_engine(spec)


@eval_app.command("run")
@user_errors
def run(
    tasks: TasksArg,
    model: Annotated[str, typer.Option("--model", "-m", help="Model spec: registry name, .gguf, hf:..., replay:PATH.")],
    out: OutOpt,
    attempts: Annotated[int, typer.Option("--attempts", "-n", min=1, help="Attempts per task.")] = 1,
    workers: WorkersOpt = 1,
    resume: ResumeOpt = False,
    sandbox: SandboxOpt = None,
    max_turns: Annotated[int, typer.Option(help="Most assistant turns per attempt.")] = 100,
    run_id: Annotated[str, typer.Option(help="Run id written to predictions (default: random).")] = "",
) -> None:
    """Run the agent on every task N times, grade each attempt, write predictions, results and summary."""
    from leaf_cli.agent import Limits
    from leaf_cli.tasks import EvalConfig, make_sandbox, run_eval
    from leaf_cli.tasks.runner import pending_jobs

    task_file = _load(tasks)
    factory = _engine_factory(model)
    config = EvalConfig(out=out, sandbox=make_sandbox(sandbox), model_name=model, base_dir=task_file.base_dir,
                        attempts=attempts, workers=workers, resume=resume, limits=Limits(max_turns=max_turns),
                        run_id=run_id)
    total = pending_jobs(task_file.tasks, attempts, out) if resume else len(task_file.tasks) * attempts
    summary = _with_progress(total, lambda on_result: run_eval(task_file.tasks, factory, config, on_result))
    _finish(out, summary, task_file)


@eval_app.command("grade")
@user_errors
def grade(
    predictions: Annotated[Optional[Path], typer.Argument(help="predictions.jsonl (or a JSON list/dict).")] = None,
    tasks: Annotated[Path, typer.Option("--tasks", "-t", help="The task file.")] = Path("tasks.jsonl"),
    out: OutOpt = Path("eval-grade"),
    gold: Annotated[bool, typer.Option("--gold", help="Grade each task's gold patch.")] = False,
    empty: Annotated[bool, typer.Option("--empty", help="Grade the empty patch.")] = False,
    workers: WorkersOpt = 1,
    resume: ResumeOpt = False,
    sandbox: SandboxOpt = None,
) -> None:
    """Grade patches without an agent. A task file is valid when --gold resolves all and --empty none."""
    from leaf_cli.tasks import EvalConfig, make_sandbox, run_grading

    if sum([predictions is not None, gold, empty]) != 1:
        raise fail("give exactly one of PREDICTIONS, --gold or --empty")
    task_file = _load(tasks)
    if gold:
        patches, name = {t.instance_id: [t.patch] for t in task_file.tasks}, "gold"
    elif empty:
        patches, name = {t.instance_id: [""] for t in task_file.tasks}, "empty"
    else:
        patches, name = _read_predictions(predictions)
    config = EvalConfig(out=out, sandbox=make_sandbox(sandbox), model_name=name, base_dir=task_file.base_dir,
                        workers=workers, resume=resume)
    graded = [t for t in task_file.tasks if gold or empty or t.instance_id in patches]
    total = sum(max(1, len(patches.get(t.instance_id, []))) for t in graded)
    summary = _with_progress(total, lambda on_result: run_grading(graded, patches, config, on_result))
    _finish(out, summary, task_file)


@eval_app.command("compare")
@user_errors
def compare(
    dir_a: Annotated[Path, typer.Argument(help="An eval output folder.")],
    dir_b: Annotated[Path, typer.Argument(help="Another one, on the same tasks.")],
) -> None:
    """Paired difference A - B: per task, then the mean difference with its standard error."""
    from rich.console import Console
    from rich.table import Table

    from leaf_cli.tasks.results import task_rates
    from leaf_cli.tasks.stats import paired_difference

    rates = []
    for folder in (dir_a, dir_b):
        if not (folder / "results.jsonl").is_file():
            raise LeafError(f"{folder} has no results.jsonl; run `leaf eval run` or `leaf eval grade` first")
        rates.append(task_rates(folder))
    diff = paired_difference(*rates)
    table = Table("task", "A", "B", "A - B")
    for task_id, d in diff["per_task"].items():
        table.add_row(task_id, f"{rates[0][task_id]:.3f}", f"{rates[1][task_id]:.3f}", f"{d:+.3f}")
    console = Console()
    console.print(table)
    se = "n/a" if diff["se"] is None else f"{diff['se']:.3f}"
    mean = "n/a" if diff["mean_diff"] is None else f"{diff['mean_diff']:+.3f}"
    console.print(f"mean difference (A - B) over {diff['n_shared']} shared tasks: {mean} ± {se} (SE)")
    for side in ("only_a", "only_b"):
        if diff[side]:
            console.print(f"{len(diff[side])} task(s) only in {'A' if side == 'only_a' else 'B'}: {', '.join(diff[side][:10])}")


def _load(path: Path):  # noqa: ANN202 - TaskFile
    """Load the task file; report each malformed line on stderr and go on with the rest."""
    from leaf_cli.tasks import load_tasks

    task_file = load_tasks(path)
    for error in task_file.errors:
        typer.echo(f"leaf: warning: skipped task line {error}", err=True)
    if not task_file.tasks:
        raise LeafError(f"{path} holds no readable task")
    return task_file


def _read_predictions(path: Path) -> tuple[dict[str, list[str]], str]:
    """SWE-bench predictions: JSONL, a JSON list, or a dict keyed by instance_id. Attempts in order."""
    if not path.is_file():
        raise LeafError(f"predictions file not found: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        rows = list(data.values()) if isinstance(data, dict) else data
    except json.JSONDecodeError:
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise LeafError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
    patches: dict[str, list[tuple[int, str]]] = {}
    names = set()
    for row in rows if isinstance(rows, list) else [rows]:
        if not isinstance(row, dict) or "instance_id" not in row:
            raise LeafError(f"{path}: every prediction needs an instance_id")
        patch = row.get("model_patch", row.get("patch")) or ""
        patches.setdefault(row["instance_id"], []).append((int(row.get("attempt", 0)), patch))
        names.add(str(row.get("model_name_or_path", "predictions")))
    ordered = {k: [p for _, p in sorted(v, key=lambda x: x[0])] for k, v in patches.items()}
    return ordered, ",".join(sorted(names)) or "predictions"


def _with_progress(total: int, work: Callable) -> dict:
    """Run `work(on_result)` under a progress bar on stderr that counts resolved attempts."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    resolved = 0
    with Progress(TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        bar = progress.add_task("", total=total)

        def on_result(result) -> None:  # noqa: ANN001 - AttemptResult
            nonlocal resolved
            resolved += int(result.resolved)
            mark = "infra: " + result.infra_failure if result.infra_failure else ("resolved" if result.resolved else "unresolved")
            progress.console.print(f"{result.instance_id} #{result.attempt}: {mark}")
            progress.update(bar, advance=1, description=f"{resolved} resolved")

        return work(on_result)


def _finish(out: Path, summary: dict, task_file) -> None:  # noqa: ANN001 - TaskFile
    """The summary table on stderr, the summary path on stdout."""
    from rich.console import Console
    from rich.table import Table

    table = Table("repository", "tasks", "attempts", "resolved", "solve rate", title="leaf eval")
    for repo, row in summary["by_repo"].items():
        table.add_row(repo, str(row["n_tasks"]), str(row["n_attempts"]), str(row["resolved"]), _pct(row["solve_rate"]))
    se = "" if summary["se"] is None else f" ± {100 * summary['se']:.1f}"
    table.add_row("all", str(summary["n_tasks"]), str(summary["n_attempts"]), str(summary["resolved"]),
                  _pct(summary["solve_rate"]) + se, style="bold")
    console = Console(stderr=True)
    console.print(table)
    if summary["infra_failures"]:
        console.print(f"[yellow]{summary['infra_failures']} infrastructure failure(s): {summary['infra_by_kind']}")
    if task_file.errors:
        console.print(f"[yellow]{len(task_file.errors)} malformed task line(s) skipped")
    typer.echo(str(out / "summary.json"))


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"
