"""Validation: a policy checkpoint attempts the held-out tasks through leaf's eval runner (run_eval).

The policy runs in-process on transformers with the RL rollout's renderer, so validation scores the
checkpoint exactly as RL samples it. Each evaluation has its own eval run folder, run with `resume`, so a
killed evaluation continues with the attempts it had not finished.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from leaf_cli.agent import Limits
from leaf_cli.llm.engine import Sampling
from leaf_cli.tasks import EvalConfig, Task, make_sandbox, run_eval
from leaf_train.driver.config import ValidationConfig
from leaf_train.driver.state import Evaluation
from leaf_train.rl.config import RLConfig


def load_model(model_dir: Path, base_dir: Path) -> Any:
    """A checkpoint's model for inference: full weights, or LoRA adapters merged into the base model."""
    from transformers import AutoModelForCausalLM

    if (model_dir / "adapter_config.json").is_file():
        from peft import PeftModel

        base = AutoModelForCausalLM.from_pretrained(base_dir)
        return PeftModel.from_pretrained(base, model_dir).merge_and_unload().eval()
    return AutoModelForCausalLM.from_pretrained(model_dir).eval()


def evaluate(model_dir: Path, base_dir: Path, tasks: list[Task], run_dir: Path, step: int, rl: RLConfig,
             val: ValidationConfig) -> Evaluation:
    """Run `val.attempts` attempts per task with the checkpoint at `model_dir` (tokenizer from `base_dir`)."""
    sampling = Sampling(temperature=val.temperature if val.temperature is not None else rl.rollout.temperature,
                        top_p=rl.rollout.top_p, top_k=rl.rollout.top_k, min_p=0.0,
                        max_tokens=val.max_tokens or rl.rollout.max_tokens, enable_thinking=False)
    limits = Limits(max_turns=val.max_turns or rl.rollout.max_turns, max_context=rl.rollout.max_context)
    config = EvalConfig(out=run_dir, sandbox=make_sandbox(val.sandbox), model_name=f"step-{step}",
                        attempts=val.attempts, workers=val.workers if val.engine == "server" else 1, resume=True,
                        limits=limits, sampling=sampling, run_id=f"val-{step}")
    if val.engine == "server":
        from leaf_cli.executor import make_executor
        from leaf_cli.llm.openai import OpenAIEngine

        server = rl.rollout.server
        config.executor = make_executor(rl.executor)  # server attempts spread like rollouts (local by default)
        summary = run_eval(tasks, lambda: OpenAIEngine(server.base_url.rstrip("/") + "/v1", server.model), config)
    else:
        summary = run_eval(tasks, _local_engine(model_dir, base_dir, step, rl), config)
    return Evaluation(step=step, solve_rate=summary.get("solve_rate") or 0.0, resolved=summary["resolved"],
                      attempts=summary["n_attempts"], run_dir=str(run_dir))


def _local_engine(model_dir: Path, base_dir: Path, step: int, rl: RLConfig) -> Any:
    """A factory of the one in-process engine on the checkpoint (attempts run one at a time)."""
    import torch
    from transformers import AutoTokenizer

    from leaf_cli.llm.transformers_engine import TransformersEngine, template_renderer, tokenizer_renderer

    if rl.torch_threads:
        torch.set_num_threads(rl.torch_threads)
    torch.manual_seed(rl.seed + step)
    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    render = tokenizer_renderer(tokenizer) if rl.rollout.template == "tokenizer" else template_renderer(tokenizer)
    engine = TransformersEngine(load_model(model_dir, base_dir), tokenizer, name=f"step-{step}",
                                context_limit=rl.rollout.max_context, render=render)
    return lambda: engine
