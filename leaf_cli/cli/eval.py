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

TasksArg = Annotated[Path, typer.Argument(help="Task file, one SWE-bench-style task per JSON line.", metavar="TASKS_ARG")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output folder (predictions, results, summary).", metavar="PATH")]
WorkersOpt = Annotated[int, typer.Option("--workers", "-j", min=1, help="Attempts run in parallel.", metavar="N")]
SandboxOpt = Annotated[Optional[str], typer.Option(help="subprocess, bwrap or docker (default: bwrap if installed).", metavar="TEXT")]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Keep finished attempts in --out and run the rest.")]
RayOpt = Annotated[Optional[str], typer.Option(
    "--ray", metavar="ADDRESS", help="Run attempts as Ray tasks: local (start a cluster here), auto (join the one "
                                     "`ray start` runs), ray://HOST:PORT or HOST:PORT. Needs the scale extra. The "
                                     "cluster's CPUs then bound how many run at once, not --workers.")]
P2PSkipOpt = Annotated[bool, typer.Option("--p2p-skip-ok", help="Count a skipped PASS_TO_PASS test as kept "
                                          "(SWE-bench v5's rule, which SWE-bench imports always follow); by default "
                                          "every P2P test of leaf's own and Pro tasks must pass.")]


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


def _engine_factory(spec: str, base_url: str | None = None) -> Callable[[], "Engine"]:
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
    make_engine(spec, base_url=base_url)  # fail fast on a bad spec, before any attempt starts
    return lambda: make_engine(spec, base_url=base_url)


@eval_app.command("run")
@user_errors
def run(
    tasks: TasksArg,
    model: Annotated[str, typer.Option("--model", "-m", help="Model spec: registry name, .gguf, hf:..., replay:PATH.", metavar="TEXT")],
    out: OutOpt,
    preset: Annotated[Optional[str], typer.Option(
        help="A published setting: swebench-verified, swebench-pro, terminal-bench-2 or patcheval (sampling, "
             "limits, 3 attempts, docker sandbox; options given explicitly win).", metavar="TEXT")] = None,
    harness: Annotated[Optional[str], typer.Option(help="Tool profile: leaf (default) or r2e (the ablation).", metavar="TEXT")] = None,
    attempts: Annotated[Optional[int], typer.Option("--attempts", "-n", min=1,
                                                    help="Attempts per task (default 1, or the preset's).", metavar="N")] = None,
    workers: WorkersOpt = 1,
    resume: ResumeOpt = False,
    sandbox: SandboxOpt = None,
    max_turns: Annotated[Optional[int], typer.Option(help="Most assistant turns per attempt (default 100, or the preset's).", metavar="N")] = None,
    max_time: Annotated[Optional[float], typer.Option(
        min=1, help="Wall-clock seconds per attempt's agent episode (default 3000, or the preset's); a task's own "
                    "timeouts.agent_s caps it.", metavar="N")] = None,
    max_tokens: Annotated[Optional[int], typer.Option(
        min=1, help="Most tokens one reply may generate (default 8192, or the preset's).", metavar="N")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="An OpenAI-compatible server (vLLM, SGLang, llama-server).", metavar="TEXT")] = None,
    p2p_skip_ok: P2PSkipOpt = False,
    run_id: Annotated[str, typer.Option(help="Run id written to predictions (default: random).", metavar="TEXT")] = "",
    safeguards: Annotated[bool, typer.Option(help="Add leaf's `loop` and `format_error` safeguards and the "
                                             "format-error message (off: FrogNano's loop exactly).")] = False,
    ray: RayOpt = None,
) -> None:
    """Run the agent on every task N times, grade each attempt, write predictions, results and summary.

    Examples:

    \b
      leaf eval run docs/examples/tasks.jsonl --model smollm2-135m --out runs/eval-try
      leaf eval run tasks.jsonl --model frognano-4b --attempts 3 --workers 2 --out runs/eval
      leaf eval run tasks.jsonl --model qwen --base-url http://127.0.0.1:8000/v1 --preset swebench-verified --out runs/v
    """
    from leaf_cli.agent import Limits
    from leaf_cli.agent.harness import get_harness
    from leaf_cli.llm.engine import Sampling
    from leaf_cli.tasks import EvalConfig, make_sandbox, run_eval
    from leaf_cli.tasks.envs.image import check_image_tasks
    from leaf_cli.tasks.runner.presets import get_preset
    from leaf_cli.tasks.runner.eval import pending_jobs

    task_file = _load(tasks)
    chosen = get_preset(preset) if preset else None
    profile = get_harness(harness or (chosen.harness if chosen else None))
    attempts = attempts or (chosen.attempts if chosen else 1)
    update: dict = {"max_turns": max_turns} if max_turns is not None else {}
    if max_time is not None:
        update["max_seconds"] = max_time
    if safeguards:
        update.update(Limits.with_safeguards().model_dump(include={"max_format_errors", "format_error_message",
                                                                   "max_repeats"}))
    limits = (chosen.limits if chosen else Limits()).model_copy(update=update)
    sandbox_name = _sandbox_name(sandbox, chosen.sandbox if chosen else None, task_file.tasks)
    check_image_tasks(task_file.tasks, sandbox_name or "")  # no Docker: one line, before anything runs
    sampling = chosen.sampling if chosen else None
    if max_tokens is not None:
        sampling = (sampling or Sampling()).model_copy(update={"max_tokens": max_tokens})
    factory = _engine_factory(model, base_url)
    config = EvalConfig(out=out, sandbox=make_sandbox(sandbox_name), model_name=model, base_dir=task_file.base_dir,
                        attempts=attempts, workers=workers, resume=resume, limits=limits,
                        sampling=sampling, run_id=run_id, harness=profile.name,
                        p2p_skip_ok=p2p_skip_ok, preset=chosen.name if chosen else None,
                        executor=_executor(ray, f"leaf eval run {tasks.name}"))
    total = pending_jobs(task_file.tasks, attempts, out) if resume else len(task_file.tasks) * attempts
    summary = _with_progress(total, lambda on_result: run_eval(task_file.tasks, factory, config, on_result))
    _finish(out, summary, task_file, chosen)


@eval_app.command("grade")
@user_errors
def grade(
    predictions: Annotated[Optional[Path], typer.Argument(help="predictions.jsonl (or a JSON list/dict).", metavar="PREDICTIONS")] = None,
    tasks: Annotated[Path, typer.Option("--tasks", "-t", help="The task file.", metavar="PATH")] = Path("tasks.jsonl"),
    out: OutOpt = Path("eval-grade"),
    gold: Annotated[bool, typer.Option("--gold", help="Grade each task's gold patch.")] = False,
    empty: Annotated[bool, typer.Option("--empty", help="Grade the empty patch.")] = False,
    workers: WorkersOpt = 1,
    resume: ResumeOpt = False,
    sandbox: SandboxOpt = None,
    p2p_skip_ok: P2PSkipOpt = False,
    ray: RayOpt = None,
) -> None:
    """Grade patches without an agent. A task file is valid when --gold resolves all and --empty none.

    Examples:

    \b
      leaf eval grade --gold --tasks docs/examples/tasks.jsonl --out runs/gold
      leaf eval grade predictions.jsonl --tasks tasks.jsonl --out runs/graded
    """
    from leaf_cli.tasks import EvalConfig, make_sandbox, run_grading
    from leaf_cli.tasks.envs.image import check_image_tasks

    if sum([predictions is not None, gold, empty]) != 1:
        raise fail("give exactly one of PREDICTIONS, --gold or --empty")
    task_file = _load(tasks)
    if gold:
        patches, name = {t.instance_id: [t.patch] for t in task_file.tasks}, "gold"
    elif empty:
        patches, name = {t.instance_id: [""] for t in task_file.tasks}, "empty"
    else:
        patches, name = _read_predictions(predictions)
    graded = [t for t in task_file.tasks if gold or empty or t.instance_id in patches]
    sandbox_name = _sandbox_name(sandbox, None, graded)
    check_image_tasks(graded, sandbox_name or "")
    config = EvalConfig(out=out, sandbox=make_sandbox(sandbox_name), model_name=name, base_dir=task_file.base_dir,
                        workers=workers, resume=resume, p2p_skip_ok=p2p_skip_ok,
                        executor=_executor(ray, f"leaf eval grade {name}"))
    total = sum(max(1, len(patches.get(t.instance_id, []))) for t in graded)
    summary = _with_progress(total, lambda on_result: run_grading(graded, patches, config, on_result))
    _finish(out, summary, task_file)


@eval_app.command("compare")
@user_errors
def compare(
    dir_a: Annotated[Path, typer.Argument(help="An eval output folder.", metavar="DIR_A")],
    dir_b: Annotated[Path, typer.Argument(help="Another one, on the same tasks.", metavar="DIR_B")],
) -> None:
    """Paired difference A - B: per task, then the mean difference with its standard error."""
    from rich.console import Console
    from rich.table import Table

    from leaf_cli.tasks.runner.results import task_rates
    from leaf_cli.tasks.runner.stats import paired_difference

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


def _executor(ray: str | None, job_name: str):  # noqa: ANN202 - an Executor, or None for local threads
    """The Ray executor `--ray` names (its cluster joined or started now, before any attempt), else None."""
    if not ray:
        return None
    import atexit

    from leaf_cli.executor import close_executors, make_executor
    from leaf_cli.executor.config import from_flag

    executor = make_executor(from_flag(ray), job_name)
    atexit.register(close_executors)  # a `local` cluster stops with this process
    return executor


def _sandbox_name(given: str | None, preset: str | None, tasks: list) -> str | None:
    """The sandbox: the user's, else the preset's, else docker when any task runs in its image, else the
    default (bwrap where installed)."""
    from leaf_cli.tasks.envs.image import is_image_task

    if given:
        return given
    if preset:
        return preset
    if any(is_image_task(t) for t in tasks):
        return "docker"
    import shutil

    return "bwrap" if shutil.which("bwrap") else "subprocess"


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
        # A one-line JSONL file parses as one object: one prediction, not a dict keyed by instance id.
        single = isinstance(data, dict) and isinstance(data.get("instance_id"), str)
        rows = [data] if single else list(data.values()) if isinstance(data, dict) else data
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
            mark = "resolved" if result.resolved else f"unresolved: {result.reason}"
            progress.console.print(f"{result.instance_id} #{result.attempt}: {mark}")
            progress.update(bar, advance=1, description=f"{resolved} resolved")

        return work(on_result)


def _finish(out: Path, summary: dict, task_file, preset=None) -> None:  # noqa: ANN001 - TaskFile, Preset
    """The summary table on stderr (per repository, then the paper's figure and the turn-limit share), the
    summary path on stdout."""
    from rich.console import Console
    from rich.table import Table

    table = Table("repository", "tasks", "attempts", "resolved", "solve rate", title="leaf eval")
    rows = list(summary["by_repo"].items())
    for repo, row in rows[:MAX_REPO_ROWS]:
        table.add_row(repo, str(row["n_tasks"]), str(row["n_attempts"]), str(row["resolved"]), _pct(row["solve_rate"]))
    if len(rows) > MAX_REPO_ROWS:
        table.add_row(f"... {len(rows) - MAX_REPO_ROWS} more", "", "", "", "")
    se = "" if summary["se"] is None else f" ± {100 * summary['se']:.1f}"
    table.add_row("all", str(summary["n_tasks"]), str(summary["n_attempts"]), str(summary["resolved"]),
                  _pct(summary["solve_rate"]) + se, style="bold")
    report, turns = summary.get("paper_report") or {}, summary.get("turn_limit") or {}
    if report.get("runs"):
        run_se = "" if report["se_over_runs"] is None else f" ± {100 * report['se_over_runs']:.1f}"
        table.add_row(f"mean of {report['runs']} run(s)", str(report["n_tasks"]), "", "",
                      _pct(report["mean_solve_rate"]) + run_se, style="bold")
    if preset is not None and preset.paper_solve_rate is not None:
        table.add_row(f"paper ({preset.name})", "", "", "", f"{preset.paper_solve_rate:.1f}%")
    console = Console(stderr=True)
    console.print(table)
    if turns.get("episodes"):
        console.print(f"{turns['turn_limit']} of {turns['episodes']} episode(s) hit the turn limit without "
                      f"finishing ({_pct(turns['turn_limit_share'])})")
    if summary["infra_failures"]:
        console.print(f"[yellow]{summary['infra_failures']} infrastructure failure(s): {summary['infra_by_kind']}")
    if task_file.errors:
        console.print(f"[yellow]{len(task_file.errors)} malformed task line(s) skipped")
    typer.echo(str(out / "summary.json"))


MAX_REPO_ROWS = 20
"""Repositories listed in the table; Harbor and PatchEval tasks are one repository each."""


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"
