"""`leaf eval import ...`: public benchmark datasets as leaf task files. Parsing and printing only.

The eval group calls `register_extras(eval_app)`; the importers live in `leaf_cli.tasks.importers`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from leaf_cli.cli.common import user_errors

OutOption = Annotated[Path, typer.Option("--out", "-o", help="The task file to write (JSON lines).", metavar="PATH")]


def register_extras(eval_app: typer.Typer) -> None:
    """Add the `import` sub-group (swebench, harbor, patcheval) to the `leaf eval` group."""
    importer = typer.Typer(help="Convert a public benchmark into a leaf task file.", no_args_is_help=True)
    importer.command("swebench")(import_swebench)
    importer.command("harbor")(import_harbor)
    importer.command("patcheval")(import_patcheval)
    eval_app.add_typer(importer, name="import")


def _write(tasks: list, out: Path, what: str) -> None:  # noqa: ANN001 - list[Task]
    from leaf_cli.tasks import dump_tasks

    dump_tasks(tasks, out)
    images = sorted({str((t.model_extra or {}).get("image_name")) for t in tasks})
    typer.echo(f"wrote {len(tasks)} {what} tasks to {out} ({len(images)} image{'s' if len(images) != 1 else ''}; "
               "they run with --sandbox docker)")


@user_errors
def import_swebench(
    rows: Annotated[Path, typer.Argument(help="Dataset rows: .jsonl, .json or .parquet, or a folder of them.", metavar="ROWS")],
    out: OutOption,
    dataset: Annotated[str, typer.Option(help="verified, lite, full, pro, or auto (Pro recognised by its columns).", metavar="TEXT")] = "auto",
    pro_scripts: Annotated[Optional[Path], typer.Option(
        help="SWE-bench Pro: the run_scripts/ folder of scaleapi/SWE-bench_Pro-os (embeds each task's test scripts).", metavar="PATH")] = None,
) -> None:
    """SWE-bench Verified / Lite / full / Pro rows -> tasks on the official per-instance images."""
    from leaf_cli.errors import LeafError
    from leaf_cli.tasks.importers import import_swebench_rows, read_rows

    if dataset not in ("auto", "verified", "lite", "full", "pro"):
        raise LeafError(f"unknown --dataset {dataset!r}; choose one of: auto, verified, lite, full, pro")
    _write(import_swebench_rows(read_rows(rows), dataset=dataset, pro_scripts=pro_scripts), out, "SWE-bench")


@user_errors
def import_harbor(
    folder: Annotated[Path, typer.Argument(help="A Harbor task folder, or a dataset folder holding many.", metavar="FOLDER")],
    out: OutOption,
) -> None:
    """Terminal-Bench 2.0 / Harbor task folders -> tasks graded by the reward their tests/test.sh writes."""
    from leaf_cli.tasks.importers import harbor_import

    imported = harbor_import(folder)
    for where, why in imported.refused.items():
        typer.echo(f"refused {where}: {why}", err=True)
    _write(imported.tasks, out, "Harbor")


@user_errors
def import_patcheval(
    dataset: Annotated[Path, typer.Argument(help="PatchEval records: datasets/input.json, patcheval_verified.json, "
                                                 "or an agent dataset such as exp_agent/sweagent/dataset.jsonl.", metavar="DATASET")],
    out: OutOption,
    card: Annotated[Optional[Path], typer.Option(
        help="Records that name each CVE's language (input.json), for agent rows that do not.", metavar="PATH")] = None,
) -> None:
    """PatchEval CVE records -> tasks graded as PatchEval grades them (prepare + fix-run, prepare + unit_test)."""
    from leaf_cli.tasks.importers import import_patcheval_rows, read_rows

    _write(import_patcheval_rows(read_rows(dataset), read_rows(card) if card else None), out, "PatchEval")
