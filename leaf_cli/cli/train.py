"""`leaf train`: the training pipeline's commands. `leaf_train` and torch are imported only when run."""

from __future__ import annotations

import contextlib
import importlib
from pathlib import Path
from typing import Annotated, Any, Iterator, Optional

import typer

from leaf_cli.cli.common import fail, user_errors

train_app = typer.Typer(help="""Train a policy: TaskPilot synthesis, DPPO RL, the iteration driver.

Examples:

\b
  leaf train --iteration 1 --config training/configs/cpu-smoke.yaml --out runs/train
  leaf train --iteration 1 --config training/configs/iteration-4b.yaml --out runs/4b
  leaf train synth --help
""", no_args_is_help=False, invoke_without_command=True)

TRAIN_EXTRA = "pip install 'leaf-agent[train]' (then `pip install torch==2.13.0` on CPU-only boxes first)"


TRAIN_MODULES = {"leaf_train", "torch", "transformers", "accelerate", "peft", "gguf", "yaml", "matplotlib"}
"""What the training extra brings; a stage that meets one missing says which extra to install."""


@contextlib.contextmanager
def training_extra() -> Iterator[None]:
    """Turn a missing training dependency, imported when a stage reaches it, into one line and exit 2."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in TRAIN_MODULES:
            raise fail(f"the training extra is not installed ({exc.name} is missing): {TRAIN_EXTRA}") from None
        raise


def load_training(module: str) -> Any:
    """Import a `leaf_train` module, or exit 2 saying how to install the training extra."""
    with training_extra():
        return importlib.import_module(module)


@train_app.callback()
@user_errors
def train(
    ctx: typer.Context,
    iteration: Annotated[Optional[int], typer.Option(help="Run iteration N of the TaskPilot + DPPO loop.", metavar="N")] = None,
    config: Annotated[Optional[Path], typer.Option(help="Training config (YAML).", metavar="PATH")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Output folder; iteration-N/ is written inside.", metavar="PATH")] = None,
) -> None:
    """Run one training iteration (`--iteration N`), or one stage through a sub-command."""
    if ctx.invoked_subcommand is not None:
        return
    if iteration is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)
    if config is None:
        raise fail("--config FILE is required with --iteration (try training/configs/cpu-smoke.yaml)")
    driver = load_training("leaf_train.iteration")
    with training_extra():
        code = driver.iteration_command(iteration=iteration, config=config, out=out or Path("runs/train"))
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")
    for name in ("synth", "rl", "consolidate", "export"):
        _add_stage(name)


_STAGES = {
    "synth": ("leaf_train.taskpilot.cli", "Synthesize calibrated tasks with TaskPilot."),
    "rl": ("leaf_train.rl.cli", "Train the policy with DPPO on a task file."),
    "consolidate": ("leaf_train.consolidate", "Measure and restore tool-use behaviours."),
    "export": ("leaf_train.export", "Export a checkpoint to a GGUF the CLI runs."),
}


def _add_stage(name: str) -> None:
    """Each stage's options live with its code in leaf_train (`main(argv) -> exit code`), so `--help` and
    every other argument pass through to it; only the stage's name and one line of help are known here."""
    module, help_text = _STAGES[name]

    @train_app.command(name, help=help_text, add_help_option=False,
                       context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def stage(ctx: typer.Context) -> None:
        mod = load_training(module)
        with training_extra():
            code = mod.main(list(ctx.args))
        raise typer.Exit(code)
