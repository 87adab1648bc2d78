"""`.ci/run`: the pytest command it runs is the README's test command, and its phase table (an EXIT trap)
prints each phase's wall time and, when a phase fails, which one, keeping the exit status."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / ".ci" / "run"


def _readme_test_command() -> str:
    tests = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Tests\n", 1)[1]
    block = tests.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines() if "-m pytest" in line]
    assert len(lines) == 1, block
    return lines[0]


def _ci_test_command() -> str:
    lines = [line.strip() for line in CI.read_text(encoding="utf-8").splitlines() if line.startswith("$PY -m pytest")]
    assert len(lines) == 1, lines
    return lines[0].replace("$PY", "python", 1)


def test_ci_runs_the_readme_test_command() -> None:
    assert _ci_test_command() == _readme_test_command()


def _timing_block() -> str:
    text = CI.read_text(encoding="utf-8")
    start, end = text.index("# Each phase's wall time"), text.index("trap 'exit 130' INT")
    return text[start:end + len("trap 'exit 130' INT")]


def _run(body: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "ci.sh"
    script.write_text(f"set -euo pipefail\n{_timing_block()}\n{body}\n", encoding="utf-8")
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)


def _table(out: str) -> dict[str, int]:
    rows = re.findall(r"^(\S+)\s+(\d+)s\s+\d+m\d\ds  cpu\s+(\d+)s$", out.split("== .ci/run phases (wall time)\n", 1)[1],
                      re.M)
    return {name: int(secs) for name, secs, _cpu in rows}


def _cpu(out: str) -> dict[str, int]:
    rows = re.findall(r"^(\S+)\s+\d+s\s+\d+m\d\ds  cpu\s+(\d+)s$", out, re.M)
    return {name: int(cpu) for name, cpu in rows}


def test_a_failing_phase_still_prints_every_phase_and_names_the_one_that_failed(tmp_path: Path) -> None:
    done = _run("phase install\nsleep 1.2\nphase tests\necho running\nexit 7\necho never", tmp_path)
    assert done.returncode == 7, done.stderr
    assert "running" in done.stdout and "never" not in done.stdout
    table = _table(done.stdout)
    assert list(table) == ["install", "tests", "total"]
    assert table["install"] >= 1 and table["total"] >= table["install"] + table["tests"] - 1
    assert done.stdout.rstrip().endswith("== .ci/run failed (exit 7) in phase tests")


def test_a_passing_run_prints_the_table_without_a_failure_line(tmp_path: Path) -> None:
    done = _run("phase apt\ntrue\nphase tests\ntrue", tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(_table(done.stdout)) == ["apt", "tests", "total"] and "failed" not in done.stdout


def test_a_killed_run_prints_its_phases_and_the_signal_status(tmp_path: Path) -> None:
    script = tmp_path / "ci.sh"
    script.write_text(f"set -euo pipefail\n{_timing_block()}\nphase tests\necho started\nwhile :; do sleep 0.1; done\n")
    run = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None and run.stdout.readline() == "started\n"  # the phase is running
    run.terminate()
    out = run.stdout.read()
    assert run.wait(timeout=30) == 143
    assert list(_table(out)) == ["tests", "total"] and "failed (exit 143) in phase tests" in out


def test_the_cpu_column_counts_the_childrens_cpu_not_the_wall_time(tmp_path: Path) -> None:
    spin = "python3 -c 'import time\nwhile time.process_time() < 2.2: pass'"
    done = _run(f"phase spin\n{spin}\nphase idle\nsleep 2.5", tmp_path)
    assert done.returncode == 0, done.stderr
    wall, cpu = _table(done.stdout), _cpu(done.stdout)
    assert cpu["spin"] >= 2 and wall["spin"] >= 2  # a busy child: its CPU shows
    assert wall["idle"] >= 2 and cpu["idle"] <= 1  # a sleeping one: wall time, next to no CPU
    assert cpu["total"] >= cpu["spin"]
