"""`leaf doctor`: CPU flags from a cpuinfo file, a crashing runtime reported (real child processes that die of
SIGILL), and whole runs through CliRunner with the real llama.cpp runtime and the SmolLM2 GGUF."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from leaf_cli.cli.main import app
from leaf_cli.models.doctor import check_cpu, check_probe, check_tool, cpu_flags

runner = CliRunner()
SIGILL_SELF = "import os, signal; os.kill(os.getpid(), signal.SIGILL)"


def cpuinfo(tmp_path: Path, flags: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 {flags}\n\nprocessor\t: 1\n")
    return path


def test_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    assert cpu_flags(cpuinfo(tmp_path, "avx2 fma f16c")) >= {"avx2", "fma", "f16c", "sse2"}  # type: ignore[operator]
    assert cpu_flags(tmp_path / "absent") is None


@pytest.mark.skipif(not sys.platform.startswith("linux") or "x86" not in __import__("platform").machine(),
                    reason="[platform] the x86 flag checks apply on x86-64 Linux")
def test_cpu_check_levels(tmp_path: Path) -> None:
    good = check_cpu(cpuinfo(tmp_path, "avx2 fma f16c avx512f"))
    assert good.status == "ok" and "avx2 fma f16c avx512f" in good.detail
    amx = check_cpu(cpuinfo(tmp_path, "avx2 fma f16c avx512f amx_tile amx_int8"))
    assert amx.status == "warn" and "AMX" in amx.detail and "GGML_NATIVE=OFF" in amx.fix
    old = check_cpu(cpuinfo(tmp_path, "sse4_2"))
    assert old.status == "warn" and "no AVX2" in old.fix and not old.required


def test_probe_that_dies_of_sigill_is_reported_not_suffered() -> None:
    check = check_probe(None, argv=[sys.executable, "-c", SIGILL_SELF])
    assert check.status == "fail" and "SIGILL" in check.detail and "rc -4" in check.detail
    assert "DGGML_NATIVE=OFF" in check.fix and "--no-cache-dir" in check.fix


def test_probe_sigill_seen_through_a_shell_as_rc_132() -> None:
    shell = f"{sys.executable} -c '{SIGILL_SELF}'; exit $?"
    check = check_probe(None, argv=["bash", "-c", shell])
    assert check.status == "fail" and "SIGILL" in check.detail and "rc 132" in check.detail


def test_probe_error_exit_and_timeout() -> None:
    failed = check_probe(None, argv=[sys.executable, "-c", "raise SystemExit('cannot load model: bad file')"])
    assert failed.status == "fail" and "cannot load model: bad file" in failed.detail
    slow = check_probe(None, argv=[sys.executable, "-c", "import time; time.sleep(30)"], timeout=1)
    assert slow.status == "fail" and "timed out after 1s" in slow.detail


def test_probe_without_any_model_is_a_warning() -> None:
    check = check_probe(None)
    assert check.status == "warn" and "leaf models pull frognano-4b" in check.fix
    assert "pip install 'leaf-agent[convert]'" in check.fix and "--model smollm2-135m" in check.fix


def test_tool_checks() -> None:
    assert check_tool("git", ["git", "--version"], True, "why", "fix").status == "ok"
    missing = check_tool("nothing", ["leaf-no-such-tool"], False, "optional", "install it")
    assert missing.status == "warn" and not missing.required and "not found" in missing.detail


@pytest.mark.llama
@pytest.mark.slow
def test_probe_runs_the_real_model(smollm2_path: Path) -> None:
    check = check_probe(smollm2_path, timeout=300)
    assert check.status == "ok", check.detail
    assert "loaded in" in check.detail and "generation" in check.detail and "tok/s" in check.detail


@pytest.mark.llama
@pytest.mark.slow
def test_doctor_passes_when_the_default_model_is_on_disk(smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAF_MODEL", "smollm2-135m")
    result = runner.invoke(app, ["doctor"])
    lines = result.stdout.splitlines()
    assert result.exit_code == 0, result.stdout
    assert [line.split()[1] for line in lines if line.startswith(("ok", "warn", "FAIL"))] == [
        "llama_cpp", "cpu", "probe", "models", "memory", "git", "bubblewrap"]
    assert lines[-1] == "all required checks passed"


@pytest.mark.llama
@pytest.mark.slow
def test_doctor_fails_when_the_default_model_is_missing(smollm2_path: Path) -> None:
    result = runner.invoke(app, ["doctor", "--json"])
    assert result.exit_code == 1
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    assert checks["models"]["status"] == "fail" and checks["models"]["fix"].startswith(
        "get it with: leaf models pull frognano-4b (")
    assert "pip install 'leaf-agent[convert]'" in checks["models"]["fix"]
    assert checks["models"]["fix"].endswith("; for a small first try (98 MB): add --model smollm2-135m")  # on disk
    assert checks["probe"]["status"] == "ok"  # the probe used the model that is on disk (SmolLM2)
