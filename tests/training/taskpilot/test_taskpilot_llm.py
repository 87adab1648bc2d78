"""The llm generator against a real OpenAI-compatible server: `python -m llama_cpp.server` with the
SmolLM2-135M GGUF from PyPI on loopback. A 135M model writes no valid task; the test checks that its
candidates are recorded, rejected with validation reasons, and that the run completes with a report."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from leaf_train.taskpilot import pipeline, report
from leaf_train.taskpilot.config import SynthConfig
from leaf_train.taskpilot.store import read_jsonl

EXPECTED = {"no_statement", "empty_gold_patch", "no_hidden_tests", "bug_patch_does_not_apply", "no_f2p",
            "test_patch_does_not_apply", "test_patch_breaks_suite", "gold_patch_does_not_apply", "gold_fails_f2p",
            "gold_breaks_p2p", "suite_does_not_run", "statement_leaks", "flaky_f2p", "too_many_f2p"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(smollm2_path: Path):  # noqa: ANN201
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path), "--host",
                             "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--model_alias", "smollm2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail("llama_cpp.server did not come up within 120 s")
        yield url
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


@pytest.mark.llama
@pytest.mark.slow
def test_llm_generator_candidates_are_rejected_with_reasons_and_the_run_completes(
        llama_server: str, mathx_repo: Path, session_cache: Path, tmp_path: Path) -> None:
    cfg = SynthConfig(sources=[str(mathx_repo)], generator="llm", generator_url=llama_server,
                      generator_model="smollm2", generator_max_turns=4, max_candidates=2, target=1, rollouts=1,
                      out=tmp_path / "run", cache_dir=session_cache)
    pipeline.run(cfg)
    candidates = read_jsonl(tmp_path / "run" / "candidates.jsonl")
    decisions = read_jsonl(tmp_path / "run" / "decisions.jsonl")
    assert len(candidates) >= 2 and all(c["meta"]["prompt_version"] == "v1" for c in candidates)
    assert len(decisions) == 2
    for d in decisions:
        assert d["accepted"] or d["reason"] in EXPECTED, d
    assert (tmp_path / "run" / "generation").is_dir()  # the generator's trajectories are kept
    data = report.write(tmp_path / "run")
    assert data["funnel"]["generated"] == 2


def _cal(solved: int, n: int):  # noqa: ANN202
    from leaf_train.taskpilot.candidate import Calibration

    return Calibration(candidate="c", round=0, specificity=None, solved=solved, rollouts=n, p_hat=solved / n,
                       ci_low=0.0, ci_high=1.0, verdict="below")


def test_refine_prompts_state_the_measured_p_hat_and_the_direction() -> None:
    from leaf_train.taskpilot import prompts
    from leaf_train.taskpilot.refine import measured

    up = prompts.render("refine_more_precise", statement="S", failing_tests="- t", **measured(_cal(1, 8), (0.2, 0.8)))
    assert "1 of 8 attempts (p̂ = 0.12)" in up and "between 0.20 and 0.80" in up and "p̂ has to go UP" in up
    down = prompts.render("refine_less_localizing", statement="S", **measured(_cal(8, 8), (0.2, 0.8)))
    assert "8 of 8 attempts (p̂ = 1.00)" in down and "p̂ has to go DOWN" in down


@pytest.mark.llama
@pytest.mark.slow
def test_llm_refine_runs_against_the_real_server(llama_server: str) -> None:
    from leaf_cli.llm.openai import OpenAIEngine
    from leaf_train.taskpilot.candidate import Validation
    from leaf_train.taskpilot.refine import llm_refine

    val = Validation(candidate="c", code_key="k", ok=True, observations={"tests/test_a.py::test_x": "assert 1 == 2"})
    text = llm_refine("mean() is wrong for some inputs.", "below", val, OpenAIEngine(llama_server, "smollm2"),
                      _cal(0, 4), (0.2, 0.8))
    assert isinstance(text, str) and text.strip()
