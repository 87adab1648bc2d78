"""The checks behind `leaf doctor`: can this machine run leaf's local model, and what to do when it cannot.

Each check returns a `Check` with a one-line detail and, when something is wrong, the fix. Anything that could
crash (importing llama.cpp, running a model) happens in a child process with a timeout, so a crash such as
SIGILL (rc 132) becomes a reported failure instead of killing leaf.
"""

from __future__ import annotations

import json
import platform
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from leaf_cli.errors import LeafError

Status = Literal["ok", "warn", "fail"]
PORTABLE_BUILD = ('CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" '
                  "pip install --no-cache-dir --force-reinstall llama-cpp-python")
CPU_FLAGS = ("avx2", "fma", "f16c", "avx512f", "amx_tile", "amx_int8")


class Check(BaseModel):
    """One line of the report. A failed `required` check makes `leaf doctor` exit 1."""

    name: str
    status: Status
    detail: str
    fix: str = ""
    required: bool = True


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str] | str:
    """Run a child process; a string says why it could not run or did not finish."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, start_new_session=True)
    except FileNotFoundError:
        return "not found"
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f}s"


def _crash(returncode: int) -> str | None:
    """Name the signal that killed a child (subprocess: -N; a shell reports 128+N)."""
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    try:
        return signal.Signals(number).name if number else None
    except ValueError:
        return None


def check_llama_cpp(python: str = sys.executable) -> Check:
    result = _run([python, "-c", "import llama_cpp; print(llama_cpp.__version__)"], timeout=120)
    fix = f"pip install 'leaf-agent[llama]' (portable build: {PORTABLE_BUILD})"
    if isinstance(result, str):
        return Check(name="llama_cpp", status="fail", detail=f"import {result}", fix=fix)
    if result.returncode != 0:
        crash = _crash(result.returncode)
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        detail = f"import crashed with {crash}" if crash else f"not importable: {last}"
        return Check(name="llama_cpp", status="fail", detail=detail, fix=fix)
    return Check(name="llama_cpp", status="ok", detail=f"llama-cpp-python {result.stdout.strip()}")


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str] | None:
    """The CPU feature flags of the first processor, or None where /proc/cpuinfo does not exist."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def check_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> Check:
    flags = cpu_flags(cpuinfo)
    machine = platform.machine()
    if flags is None:
        return Check(name="cpu", status="ok", required=False, detail=f"{machine} (no /proc/cpuinfo to read)")
    if machine.lower() in ("arm64", "aarch64"):
        neon = "neon" if "asimd" in flags else "no NEON"
        return Check(name="cpu", status="ok", required=False, detail=f"{machine}: {neon}")
    have = [f for f in CPU_FLAGS if f in flags]
    detail = f"{machine}: " + (" ".join(have) or "none of " + " ".join(CPU_FLAGS))
    if not {"avx2", "fma", "f16c"} <= flags:
        return Check(name="cpu", status="warn", required=False, detail=detail,
                     fix="no AVX2/FMA/F16C: llama.cpp will be slow; build it without those flags (-DGGML_AVX2=OFF)")
    if "amx_tile" in flags:
        return Check(name="cpu", status="warn", required=False, detail=detail + " (AMX advertised)",
                     fix="AMX kernels fault on some VMs: use the portable build (" + PORTABLE_BUILD + ")")
    return Check(name="cpu", status="ok", required=False, detail=detail)


def probe_command(model: Path, python: str = sys.executable) -> list[str]:
    return [python, "-m", "leaf_cli.models.probe", str(model)]


def check_probe(model: Path | None, argv: list[str] | None = None, timeout: float = 300) -> Check:
    """Load and run `model` in a child process (`argv` replaces the command, for tests)."""
    if model is None and argv is None:
        return Check(name="probe", status="warn", detail="no model on disk to run",
                     fix=_pull_fix(None))
    result = _run(argv or probe_command(model), timeout=timeout)  # type: ignore[arg-type]
    label = model.name if model else "probe"
    if isinstance(result, str):
        return Check(name="probe", status="fail", detail=f"{label}: {result}", fix="see `leaf doctor --verbose`")
    crash = _crash(result.returncode)
    if crash == "SIGILL":
        return Check(name="probe", status="fail", detail=f"{label}: llama.cpp crashed with SIGILL (illegal "
                     f"instruction, rc {result.returncode})", fix=f"rebuild for this CPU: {PORTABLE_BUILD}")
    if crash:
        return Check(name="probe", status="fail", detail=f"{label}: killed by {crash} (rc {result.returncode})",
                     fix="not enough memory? try a smaller model or context (--n-ctx)")
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return Check(name="probe", status="fail", detail=f"{label}: {last[:200]}", fix="see the error above")
    try:
        stats = json.loads(result.stdout.strip().splitlines()[-1])
        detail = (f"{label}: loaded in {stats['load_s']}s, prompt {stats['prompt_tok_s']} tok/s, "
                  f"generation {stats['gen_tok_s']} tok/s")
    except (ValueError, IndexError, KeyError, TypeError):
        detail = f"{label}: ran (unreadable statistics)"
    return Check(name="probe", status="ok", detail=detail)


def _default_model_path() -> Path | None:
    """The default model's file when it is on disk (the one `leaf fix` runs)."""
    from leaf_cli.models.registry import all_manifests
    from leaf_cli.models.resolve import default_spec
    from leaf_cli.models.store import locate

    try:
        manifest = all_manifests().get(default_spec())
        return locate(manifest) if manifest is not None else None
    except LeafError:
        return None


def check_models() -> tuple[Check, Path | None]:
    """Which registry models are on disk; the path the probe should run (the smallest present)."""
    from leaf_cli.models.registry import all_manifests
    from leaf_cli.models.resolve import default_spec
    from leaf_cli.models.store import locate

    try:
        present = {name: path for name, m in all_manifests().items() if (path := locate(m)) is not None}
    except LeafError as exc:
        return Check(name="models", status="fail", detail=str(exc), fix="fix or remove that manifest"), None
    smallest = min(present.values(), key=lambda p: p.stat().st_size) if present else None
    default = default_spec()
    names = ", ".join(sorted(present)) or "none"
    if default in present or Path(default).is_file():
        return Check(name="models", status="ok", detail=f"on disk: {names}"), smallest
    return Check(name="models", status="fail", detail=f"default model {default} is not on disk (on disk: {names})",
                 fix=_pull_fix(default)), smallest


LONG_CONTEXT = 65_536


def check_memory(model: Path | None, machine: tuple[int, int | None] | None = None) -> Check:
    """What `model` costs at 64k context (or its training context, if shorter) with each KV cache type, against
    this machine's memory (`machine`: (total, available) bytes, for tests)."""
    from leaf_cli.llm.gguf_info import read_gguf_info
    from leaf_cli.models.memory import estimate, gb, machine_memory

    if model is None:
        return Check(name="memory", status="warn", required=False, detail="no model on disk to size")
    try:
        info = read_gguf_info(model)
    except LeafError as exc:
        return Check(name="memory", status="warn", required=False, detail=str(exc))
    ctx = min(LONG_CONTEXT, info.context_length or LONG_CONTEXT)
    f16, q8 = estimate(info, ctx, "f16"), estimate(info, ctx, "q8_0")
    if f16 is None or q8 is None:
        return Check(name="memory", status="warn", required=False,
                     detail=f"{model.name}: its header does not say enough to size the KV cache")
    state = f" + recurrent state {gb(f16.recurrent)}" if f16.recurrent else ""
    detail = (f"{model.name} at {ctx // 1024}k context: {gb(f16.total)} with an f16 KV cache, {gb(q8.total)} with q8_0 "
              f"(weights {gb(f16.weights)} + KV {gb(f16.kv_cache)} / {gb(q8.kv_cache)}{state}; compute buffers extra)")
    machine = machine or machine_memory()
    if machine is None:
        return Check(name="memory", status="ok", required=False, detail=detail)
    total, available = machine
    detail += f"; this machine has {gb(total)}" + (f", {gb(available)} free" if available is not None else "")
    room = available if available is not None else total
    if f16.total <= room:
        return Check(name="memory", status="ok", required=False, detail=detail)
    if q8.total <= room:
        return Check(name="memory", status="warn", required=False, detail=detail,
                      fix="use --kv-cache q8_0 (or kv_cache = \"q8_0\" in the config) for long runs")
    return Check(name="memory", status="warn", required=False, detail=detail,
                 fix="use --kv-cache q8_0 and a smaller --n-ctx, or free memory")


def check_tool(name: str, argv: list[str], required: bool, why: str, fix: str) -> Check:
    if shutil.which(argv[0]) is None:
        return Check(name=name, status="fail" if required else "warn", required=required,
                     detail=f"{argv[0]} not found ({why})", fix=fix)
    result = _run(argv, timeout=30)
    if isinstance(result, str) or result.returncode != 0:
        return Check(name=name, status="fail" if required else "warn", required=required,
                     detail=f"{argv[0]} does not run", fix=fix)
    version = (result.stdout or result.stderr).strip().splitlines() or [argv[0]]
    return Check(name=name, status="ok", required=required, detail=version[0])


def run_checks(probe_model: Path | None = None, probe_timeout: float = 300) -> list[Check]:
    """Every check, in the order the report shows them. The probe runs only when llama_cpp imports."""
    llama = check_llama_cpp()
    models, smallest = check_models()
    if llama.status == "ok":
        probe = check_probe(probe_model or smallest, timeout=probe_timeout)
    else:
        probe = Check(name="probe", status="fail", detail="skipped: llama_cpp is not importable", fix=llama.fix)
    return [
        llama, check_cpu(), probe, models, check_memory(probe_model or _default_model_path() or smallest),
        check_tool("git", ["git", "--version"], True, "leaf checkpoints and undoes through git",
                   "install git (apt install git / brew install git)"),
        check_tool("bubblewrap", ["bwrap", "--version"], False, "leaf fix's default sandbox and the eval sandboxes use it",
                   "apt install bubblewrap (or run leaf fix --sandbox none)"),
    ]


def _pull_fix(spec: str | None) -> str:
    """The command that gets `spec` (default: the default model), with the extra a conversion needs, and the
    small model to try first."""
    from leaf_cli.models.resolve import default_spec, first_try, get_hint, manifest_for

    spec = spec or default_spec()

    try:
        manifest = manifest_for(spec)
    except LeafError:
        return f"leaf models pull {spec}"
    return get_hint(manifest, spec) + first_try(manifest)
