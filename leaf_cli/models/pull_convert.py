"""`leaf models pull` for a model published as safetensors: download → convert → quantize → verify → register.

Each stage leaves a complete file or nothing (outputs are written under a `.partial` name and renamed), and
what is done is recorded in `<data dir>/pulls/NAME/state.json`, so a pull interrupted at any stage — a dropped
connection, Ctrl-C, a full disk — continues from that stage the next time (offline too, once the download is
complete). The model is registered only after verification; the download and the unquantized GGUF are then
deleted unless `keep`. The disk space the remaining stages need is checked, and said, before anything starts.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, Field

from leaf_cli.errors import LeafError
from leaf_cli.models import converter, hub
from leaf_cli.models.manifest import Manifest
from leaf_cli.models.quantize import check_quant, quant_label, quantize
from leaf_cli.models.registry import data_dir
from leaf_cli.models.snapshot import Snapshot, download_snapshot, list_snapshot, read_architectures
from leaf_cli.models.store import record_download, sha256_file
from leaf_cli.models.toml_write import write_atomic
from leaf_cli.models.verify import VerifyReport, verify_gguf

OnStage = Callable[[str, str], None]
"""Called with (stage, one line about it): resolve, download, convert, quantize, verify, register."""

QUANT_RATIO = {"q4_k_m": 0.34, "q4_0": 0.31, "q4_1": 0.34, "q5_k_m": 0.39, "q6_k": 0.45, "q8_0": 0.55,
               "f16": 1.0, "bf16": 1.0}
"""Size of a quantized GGUF over its BF16 one, for the disk-space check (llama.cpp's bits per weight)."""


class PullState(BaseModel):
    """What a pull has done so far, kept in its work folder so an interrupted pull resumes."""

    repo: str
    commit: str
    snapshot: Snapshot
    verified: list[str] = Field(default_factory=list, description="Files downloaded and checked.")


def work_dir(name: str) -> Path:
    return data_dir() / "pulls" / name


def gguf_dir() -> Path:
    """Where converted models are kept once registered."""
    return data_dir() / "gguf"


def pull_converted(manifest: Manifest, *, quant: str | None = None, keep: bool = False,
                   on_progress: hub.OnProgress | None = None, on_stage: OnStage | None = None) -> Path:
    """Make `manifest`'s GGUF from its hub safetensors; return the registered file. Errors: one LeafError line."""
    say = on_stage or (lambda stage, line: None)
    quant = check_quant(quant or manifest.source.quant)
    converter.check_requirements()
    work = work_dir(manifest.name)
    state = _resolve(manifest, work, say)
    snapshot = state.snapshot
    stem = snapshot.repo.split("/")[-1]
    bf16 = work / f"{stem}-BF16.gguf"
    made = bf16 if quant == "bf16" else work / f"{stem}-{quant_label(quant)}.gguf"
    _check_disk(manifest, state, bf16, made, quant, work, say)

    folder = work / "snapshot"
    remaining = [f for f in snapshot.files if f.name not in state.verified]
    if bf16.is_file() or not remaining:
        say("download", f"{snapshot.repo}: all {len(snapshot.files)} files downloaded and verified")
    else:
        say("download", f"downloading {len(remaining)} files from {snapshot.repo}")
        _download(state, folder, work, on_progress)
    if not bf16.is_file():
        _check_architecture(folder / "config.json", snapshot.repo)
        if not converter.is_fetched():
            say("convert", f"fetching llama.cpp's converter once with pip (the llama-cpp-python "
                           f"{converter.llama_cpp_version()} sdist, ~80 MB) into {converter.cache_root()}")
        say("convert", f"converting to BF16 with llama.cpp's convert_hf_to_gguf.py "
                       f"(llama-cpp-python {converter.llama_cpp_version()})")
        converter.convert(folder, bf16)
    if not made.is_file():
        say("quantize", f"quantizing to {quant_label(quant)} with llama.cpp's quantizer")
        quantize(bf16, made, quant)
    say("verify", "loading the result and comparing it with the unquantized conversion")
    try:
        report = verify_gguf(made, architecture=manifest.architecture, hybrid=manifest.hybrid,
                             reference=None if made == bf16 else bf16)
    except LeafError:
        made.unlink(missing_ok=True)  # never left where a later pull would take it for a good file
        raise
    say("verify", report.summary())
    final = _register(manifest, state, made, quant, report)
    say("register", f"registered {manifest.name}: {final}")
    if keep:
        say("register", f"kept the download ({folder}) and the BF16 GGUF ({bf16})")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return final


def _resolve(manifest: Manifest, work: Path, say: OnStage) -> PullState:
    """The hub's current file list; a pull already under way for the same commit continues."""
    source = manifest.source
    previous = _load_state(work)
    try:
        snapshot = list_snapshot(source.repo or "", source.revision)
    except LeafError:
        if previous is not None and _download_complete(previous, work):
            say("resolve", f"the hub is unreachable; continuing the pull of {previous.repo}@{previous.commit[:12]}")
            return previous
        raise
    if previous is not None and previous.commit == snapshot.commit:
        say("resolve", f"continuing the pull of {snapshot.repo}@{snapshot.commit[:12]}")
        return previous
    if previous is not None:
        say("resolve", f"{snapshot.repo} changed since the last try ({previous.commit[:12]} → "
                       f"{snapshot.commit[:12]}); starting over")
        shutil.rmtree(work, ignore_errors=True)
    state = PullState(repo=snapshot.repo, commit=snapshot.commit, snapshot=snapshot)
    _save_state(work, state)
    return state


def _download_complete(state: PullState, work: Path) -> bool:
    return all(f.name in state.verified and (work / "snapshot" / f.name).is_file() for f in state.snapshot.files) \
        or any(work.glob("*-BF16.gguf"))


def _check_disk(manifest: Manifest, state: PullState, bf16: Path, made: Path, quant: str, work: Path,
                say: OnStage) -> None:
    snapshot = state.snapshot
    download = 0 if bf16.is_file() else sum(f.size for f in snapshot.files if f.name not in state.verified)
    bf16_bytes = 0 if bf16.is_file() else snapshot.weights_bytes
    quant_bytes = 0 if made.is_file() or made == bf16 else int(snapshot.weights_bytes * QUANT_RATIO.get(quant, 1.0))
    needed = download + bf16_bytes + quant_bytes
    probe = work if work.exists() else data_dir()
    probe.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(probe).free
    plan = (f"{snapshot.repo}@{snapshot.commit[:12]}: download {_gb(download)}, BF16 GGUF {_gb(bf16_bytes)}, "
            f"{quant_label(quant)} GGUF {_gb(quant_bytes)}; needs {_gb(needed)} free, {_gb(free)} free in {probe}")
    if needed > free:
        raise LeafError(f"not enough disk space to pull {manifest.name}: {plan}; free {_gb(needed - free)} "
                        "and run the pull again")
    say("resolve", plan)


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def _download(state: PullState, folder: Path, work: Path, on_progress: hub.OnProgress | None) -> None:
    verified = set(state.verified)

    def recorded(file: object, path: Path) -> None:
        state.verified = sorted(verified)
        _save_state(work, state)
        if path.name == "config.json":  # before the weights: an unsupported model costs no download
            _check_architecture(path, state.repo)

    download_snapshot(state.snapshot, folder, verified, on_progress=on_progress, on_file=recorded)


def _check_architecture(config_json: Path, repo: str) -> None:
    found = read_architectures(config_json)
    if not any(a in converter.HF_ARCHITECTURES for a in found):
        raise LeafError(f"{repo} is a {', '.join(found) or 'model of unknown architecture'} checkpoint; leaf "
                        f"converts and runs {', '.join(converter.HF_ARCHITECTURES)} (Qwen3.5) models")


def _register(manifest: Manifest, state: PullState, made: Path, quant: str, report: VerifyReport) -> Path:
    final_dir = gguf_dir()
    final_dir.mkdir(parents=True, exist_ok=True)
    final = final_dir / made.name
    if made.name.endswith("-BF16.gguf"):  # --quant bf16: the conversion itself, which --keep also keeps
        shutil.copy2(made, final)
    else:
        made.replace(final)
    extra: dict[str, object] = {"repo": state.repo, "commit": state.commit, "quant": quant,
                                "architecture": report.architecture, "hybrid": report.hybrid}
    if report.agreement is not None:
        extra.update(top1_agree=report.agreement.top1_agree, prompts=report.agreement.prompts,
                     mean_kl=round(report.agreement.mean_kl, 6))
    record_download(manifest.name, final, sha256_file(final), "converted", **extra)
    return final


def _load_state(work: Path) -> PullState | None:
    path = work / "state.json"
    if not path.is_file():
        return None
    try:
        return PullState.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return None  # a state from another leaf version: start over


def _save_state(work: Path, state: PullState) -> None:
    write_atomic(work / "state.json", state.model_dump_json(indent=2))
