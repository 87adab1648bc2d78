"""llama.cpp's own safetensors → GGUF converter, taken from the sdist of the installed llama-cpp-python.

The wheel ships neither `convert_hf_to_gguf.py` nor `gguf-py`, but the sdist of the same version vendors the
llama.cpp those come from (`vendor/llama.cpp/`), so the converter always matches the runtime that will load
its output. `converter_dir()` fetches that sdist once with pip into leaf's cache (`$LEAF_CONVERTER_CACHE`,
else the user cache dir) and unpacks the converter; nothing of it is ever copied into this repository.
`convert()` runs the script in a child process (bounded by a timeout, its log kept next to the output) and
turns a failure into one line.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from leaf_cli.errors import LeafError

PACKAGE = "llama-cpp-python"
VENDOR = "vendor/llama.cpp/"
# What the conversion needs from the sdist: the script, its model classes, its gguf-py, and the small
# vocab-only reference GGUFs (tests build tokenizers from them).
_MEMBERS = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/", "models/ggml-vocab-")
FETCH_TIMEOUT_S = 900
CONVERT_TIMEOUT_S = 3 * 3600  # a 4B checkpoint takes minutes on a laptop; a hung child must still end
HF_ARCHITECTURES = ("Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM")
"""The HF architectures leaf converts and runs (FrogNano and its base); the converter knows many more."""


CONVERT_EXTRA = ("pip install 'leaf-agent[convert]' (on a CPU-only machine `pip install torch==2.13.0` first, "
                 "or it downloads a CUDA build of several GB)")
_NEEDED = ("llama_cpp", "torch", "transformers", "safetensors", "numpy", "yaml")


def check_requirements() -> None:
    """Converting needs torch and transformers (the converter imports them): say so before any download."""
    import importlib.util

    missing = [name for name in _NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        raise LeafError(f"making a GGUF from safetensors needs {', '.join(missing)}: {CONVERT_EXTRA}")


def llama_cpp_version() -> str:
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise LeafError("llama-cpp-python is not installed: pip install 'leaf-agent[llama]' "
                        "(build flags in the README)") from None


def cache_root() -> Path:
    """Where the fetched sdist and the unpacked converter live (shared by every pull and export)."""
    override = os.environ.get("LEAF_CONVERTER_CACHE")
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("leaf", appauthor=False)) / "llama.cpp-converter"


def is_fetched(version: str | None = None) -> bool:
    """Whether the converter for `version` (default: the installed one) is already unpacked in the cache."""
    return (cache_root() / (version or llama_cpp_version()) / "llama.cpp" / "convert_hf_to_gguf.py").is_file()


def converter_dir(version: str | None = None) -> Path:
    """The unpacked `vendor/llama.cpp` of llama-cpp-python `version` (default: the installed one)."""
    version = version or llama_cpp_version()
    root = cache_root() / version
    done = root / "llama.cpp"
    if (done / "convert_hf_to_gguf.py").is_file():
        return done
    root.mkdir(parents=True, exist_ok=True)
    sdist = _fetch_sdist(version, root)
    # Unpack beside the final folder and rename: an interrupted unpack never looks complete.
    scratch = Path(tempfile.mkdtemp(prefix=".unpack-", dir=root))
    try:
        _unpack(sdist, scratch)
        try:
            (scratch / "llama.cpp").rename(done)
        except OSError:
            if not (done / "convert_hf_to_gguf.py").is_file():  # not a concurrent unpack that won the race
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return done


def _fetch_sdist(version: str, root: Path) -> Path:
    found = sorted(root.glob(f"llama_cpp_python-{version}.tar.gz"))
    if found:
        return found[0]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", PACKAGE, "--quiet",
               "--disable-pip-version-check", "-d", str(root), f"{PACKAGE}=={version}"]
    # pip prepares the sdist's metadata in child processes of its own: a timeout ends the whole group.
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
    try:
        _out, err = child.communicate(timeout=FETCH_TIMEOUT_S)
    except BaseException:
        _kill_group(child)
        raise LeafError(f"fetching the {PACKAGE} {version} sdist (llama.cpp's converter) was stopped after "
                        f"{FETCH_TIMEOUT_S} s or interrupted; check the network to PyPI and retry") from None
    found = sorted(root.glob(f"llama_cpp_python-{version}.tar.gz"))
    if child.returncode != 0 or not found:
        raise LeafError(f"cannot fetch llama.cpp's converter ({PACKAGE} {version} sdist from PyPI): "
                        f"{_last_line(err) or 'pip failed'}; check the network to PyPI")
    return found[0]


def _unpack(sdist: Path, into: Path) -> None:
    prefix = f"{sdist.name.removesuffix('.tar.gz')}/{VENDOR}"
    with tarfile.open(sdist, "r:gz") as archive:
        members = [m for m in archive.getmembers()
                   if m.name.startswith(prefix) and m.name[len(prefix):].startswith(_MEMBERS)
                   and (m.isfile() or m.isdir())]
        if not any(m.name.endswith("/convert_hf_to_gguf.py") for m in members):
            raise LeafError(f"{sdist} has no {VENDOR}convert_hf_to_gguf.py; this llama-cpp-python "
                            "version cannot convert models")
        for member in members:
            member.name = "llama.cpp/" + member.name[len(prefix):]
        archive.extractall(into, members=members, filter="data")


def convert(snapshot: Path, out: Path, *, outtype: str = "bf16", extra_args: tuple[str, ...] = (),
            timeout_s: float = CONVERT_TIMEOUT_S) -> Path:
    """Convert the HF checkpoint folder `snapshot` to the GGUF `out` (written whole or not at all).

    `extra_args` go to the converter (export passes `--no-mtp` for a checkpoint without MTP tensors)."""
    script = converter_dir() / "convert_hf_to_gguf.py"
    partial = out.with_name(out.name + ".partial")
    log = out.with_name(out.name + ".convert.log")
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(script), str(snapshot), "--outfile", str(partial), "--outtype", outtype, *extra_args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}
    with log.open("w") as sink:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True)
        try:
            code = child.wait(timeout=timeout_s)
        except BaseException:  # a timeout or Ctrl-C: the converter's whole group goes with it
            _kill_group(child)
            partial.unlink(missing_ok=True)
            raise
    if code != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        reason = _failure_line(log.read_text(errors="replace"))
        raise LeafError(f"llama.cpp's converter failed on {snapshot}: {reason} (log: {log})")
    partial.rename(out)
    return out


def _kill_group(child: subprocess.Popen) -> None:  # type: ignore[type-arg]
    import signal

    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def _failure_line(text: str) -> str:
    """The converter's own reason: the last exception line of its traceback, else its last log line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line.split(":", 1)[0] or line.startswith(("ERROR:", "error:")):
            return line[:300]
    return lines[-1][:300] if lines else "no output"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip() and not line.startswith("WARNING: Location")]
    return lines[-1].strip() if lines else ""


def main(argv: list[str]) -> int:
    """`python -m leaf_cli.models.converter`: fetch and unpack the converter now (CI does this once, ahead)."""
    if argv:
        print("usage: python -m leaf_cli.models.converter", file=sys.stderr)
        return 2
    try:
        print(converter_dir())
    except LeafError as exc:
        print(f"leaf: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
