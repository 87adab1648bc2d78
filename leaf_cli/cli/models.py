"""`leaf models`: list, pull, add, rm and describe the models leaf can run."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from leaf_cli.cli.common import user_errors
from leaf_cli.errors import LeafError

models_app = typer.Typer(help="The model registry: list, pull, add, rm, info.", no_args_is_help=True)


def _size(n: int | None) -> str:
    if not n:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return "?"


def _entry(name: str) -> dict[str, Any]:
    from leaf_cli.models.resolve import default_spec, manifest_for
    from leaf_cli.models.store import locate, read_downloads

    manifest = manifest_for(name)
    name = manifest.name
    path = locate(manifest)
    record = read_downloads().get(name) if manifest.source.kind in ("hf", "hf-safetensors") else None
    return {
        "name": name, "default": name == default_spec(), "on_disk": path is not None,
        "path": str(path) if path else None, "size_bytes": path.stat().st_size if path else manifest.size_bytes,
        "description": manifest.description, "family": manifest.family, "chat_format": manifest.chat_format,
        "context_length": manifest.context_length, "n_ctx": manifest.n_ctx, "licence": manifest.licence,
        "source": manifest.source.describe(), "builtin": manifest.builtin,
        "sha256": (record or {}).get("sha256") or manifest.source.sha256,
        "verified_by": (record or {}).get("verified_by"), "unverified": manifest.unverified,
        "sampling": manifest.sampling.model_dump(exclude_none=True), "notes": manifest.notes,
    }


@models_app.command("list")
@user_errors
def list_models(as_json: Annotated[bool, typer.Option("--json", help="One JSON array on stdout.")] = False) -> None:
    """Every model leaf knows, whether it is on disk, and which one is the default."""
    from leaf_cli.models.registry import all_manifests

    entries = [_entry(name) for name in sorted(all_manifests())]
    if as_json:
        typer.echo(json.dumps(entries, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("", "name", "on disk", "size", "context", "format", "source", box=None, pad_edge=False)
    for e in entries:
        table.add_row("*" if e["default"] else "", e["name"], "yes" if e["on_disk"] else "no", _size(e["size_bytes"]),
                      str(e["n_ctx"]), e["chat_format"], e["source"])
    Console(width=200).print(table)
    typer.echo("* default model ($LEAF_MODEL overrides); `leaf models pull NAME` downloads one.")


@models_app.command()
@user_errors
def pull(
    name: Annotated[str, typer.Argument(help="A registry name or hf:OWNER/REPO/FILE.gguf.", metavar="NAME")],
    quant: Annotated[Optional[str], typer.Option(
        help="For models published as safetensors: the quantization to make (q4_k_m, q5_k_m, q6_k, q8_0, f16, ...).", metavar="TEXT")] = None,
    keep: Annotated[bool, typer.Option(
        "--keep", help="Keep the downloaded safetensors and the unquantized GGUF (deleted by default).")] = False,
) -> None:
    """Download a model and verify it; a model published as safetensors is converted and quantized here.

    Each stage resumes: run the same command again after an interruption.

    Examples:

    \b
      leaf models pull frognano-4b
      leaf models pull frognano-4b --quant q8_0 --keep
      leaf models pull hf:OWNER/REPO/model-q4_k_m.gguf
    """
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    from leaf_cli.models.pull import pull as pull_model
    from leaf_cli.models.resolve import manifest_for
    from leaf_cli.models.store import read_downloads

    manifest = manifest_for(name)
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    columns = ("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True, disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task(manifest.name, total=manifest.source.download_bytes or manifest.size_bytes)

        def on_progress(done: int, total: int | None) -> None:
            progress.update(task, completed=done, total=total)

        def on_stage(stage: str, line: str) -> None:
            console.print(f"{stage}: {line}", markup=False)

        path = pull_model(manifest, on_progress=on_progress, on_stage=on_stage, quant=quant, keep=keep)
    record = read_downloads().get(manifest.name, {})
    how = {"manifest": "sha256 matches the manifest", "hub": "sha256 matches the hub's",
           "converted": "converted from the hub's checksummed safetensors and verified",
           "none": "no checksum known: not verified"}.get(record.get("verified_by", ""), "shipped by a package")
    typer.echo(f"{manifest.name}: {path} ({how})")


@models_app.command()
@user_errors
def add(
    path: Annotated[Path, typer.Argument(help="A local .gguf file.", metavar="PATH")],
    name: Annotated[Optional[str], typer.Option(
        "--name", help="Short name to use with --model (default: the file's name without .gguf).", metavar="TEXT")] = None,
    chat_format: Annotated[str, typer.Option(help="qwen3.5, chatml, ... or auto (the GGUF's own template).", metavar="TEXT")] = "auto",
    n_ctx: Annotated[Optional[int],
                     typer.Option(help="Context window to open (default: the model's, capped at 65,536).", metavar="N")] = None,
) -> None:
    """Register a local GGUF file under a name (by default the file's name without .gguf). The file is checked
    first and is never moved or copied.

    Examples:

    \b
      leaf models add ~/models/qwen3.5-4b-q4_k_m.gguf
      leaf models add ./my-finetune.gguf --name mine --chat-format qwen3.5
    """
    from leaf_cli.models.registry import add_model

    name = name or _name_from_file(path)
    manifest, saved = add_model(path, name=name, chat_format=chat_format, n_ctx=n_ctx)
    typer.echo(f"added {name}: {manifest.source.path} ({manifest.family or 'unknown'} architecture, "
               f"context {manifest.context_length}, {_size(manifest.size_bytes)}); record {saved}")


def _name_from_file(path: Path) -> str:
    """`Qwen3.5-4B-Q4_K_M.gguf` -> `qwen3.5-4b-q4_k_m`: the registry's names are lower-case, without spaces."""
    stem = path.name[:-len(".gguf")] if path.name.lower().endswith(".gguf") else path.stem
    return re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).strip("-._") or "model"


@models_app.command()
@user_errors
def rm(name: Annotated[str, typer.Argument(help="A model name from `leaf models list`, or an hf: spec.", metavar="NAME")]) -> None:
    """Forget a user-added model (its file stays), or delete a pulled model's download."""
    from leaf_cli.models.registry import delete_user_manifest
    from leaf_cli.models.resolve import manifest_for
    from leaf_cli.models.store import forget_download, read_downloads

    manifest = manifest_for(name)
    name = manifest.name
    if manifest.source.kind == "path" and not manifest.builtin:
        delete_user_manifest(name)
        typer.echo(f"removed {name} from the registry; the file {manifest.source.path} was left in place")
        return
    if manifest.source.kind == "package":
        raise LeafError(f"{name} ships in the Python package {manifest.source.package}; uninstall that with pip")
    record = read_downloads().get(name)
    if record is None:
        raise LeafError(f"{name} is not downloaded; nothing to remove")
    pointer = Path(record["path"])
    blob = Path(os.path.realpath(pointer))
    blob.unlink(missing_ok=True)
    if pointer.is_symlink():
        pointer.unlink()
    forget_download(name)
    typer.echo(f"deleted the download of {name} ({_size(record.get('size_bytes'))} freed)")


@models_app.command()
@user_errors
def info(
    name: Annotated[str, typer.Argument(help="A model name from `leaf models list`, or an hf: spec.", metavar="NAME")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Everything leaf knows about one model: source, checksum, sampling defaults, model card."""
    from leaf_cli.models.registry import card_text
    from leaf_cli.models.resolve import manifest_for

    entry = _entry(name)
    if as_json:
        typer.echo(json.dumps(entry, indent=2))
        return
    for key in ("name", "description", "family", "chat_format", "context_length", "n_ctx", "licence", "source",
                "path", "sha256", "verified_by"):
        if entry[key] not in (None, ""):
            typer.echo(f"{key:15} {entry[key]}")
    typer.echo(f"{'size':15} {_size(entry['size_bytes'])}")
    typer.echo(f"{'sampling':15} " + ", ".join(f"{k}={v}" for k, v in entry["sampling"].items()))
    if entry["unverified"]:
        typer.echo(f"{'unverified':15} " + ", ".join(entry["unverified"]))
    if entry["notes"]:
        typer.echo(f"{'notes':15} {entry['notes']}")
    card = card_text(manifest_for(name))
    if card:
        typer.echo("\n" + card.rstrip())


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")
