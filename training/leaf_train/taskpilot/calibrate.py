"""Calibration: N rollouts of the current policy on a candidate, through the eval machinery.

Each statement gets its own eval run folder (OUT/rollouts/<candidate>), run with `resume`, so a killed
synthesis continues its rollouts where they stopped. p̂ = solved / N with its Wilson interval; the verdict
is where p̂ falls against the band [lo, hi] (inclusive).
"""

from __future__ import annotations

import time
from pathlib import Path

from leaf_cli.agent import Limits
from leaf_cli.executor import Executor
from leaf_cli.llm.engine import Sampling
from leaf_cli.tasks import EvalConfig, RunDir, Sandbox, Task, run_eval
from leaf_train.taskpilot.candidate import Calibration
from leaf_train.taskpilot.config import SynthConfig
from leaf_train.taskpilot.policy import Policy, wilson


def verdict(p_hat: float, band: tuple[float, float]) -> str:
    lo, hi = band
    return "below" if p_hat < lo else "above" if p_hat > hi else "in_band"


def rollout_budget(cfg: SynthConfig) -> tuple[Limits, Sampling | None]:
    """The limits and sampling of one calibration rollout (None: leaf's default sampling)."""
    limits = Limits(max_turns=cfg.agent_max_turns, max_seconds=cfg.agent_timeout_s)
    if cfg.agent_max_context is not None:
        limits = limits.model_copy(update={"max_context": cfg.agent_max_context})
    sampling = Sampling(max_tokens=cfg.agent_max_tokens) if cfg.agent_max_tokens is not None else None
    return limits, sampling


def calibrate(task: Task, round_: int, level: int | None, policy: Policy, sandbox: Sandbox, cfg: SynthConfig,
              out: Path, executor: Executor | None = None) -> Calibration:
    """Run `cfg.rollouts` attempts of `policy` on `task` (on `executor`: None = here, one at a time) and
    place p̂ against the band."""
    began = time.monotonic()
    run_dir = out / "rollouts" / task.instance_id
    done = len(RunDir(run_dir).load_results()) if run_dir.exists() else 0
    limits, sampling = rollout_budget(cfg)
    config = EvalConfig(out=run_dir, sandbox=sandbox, model_name=policy.name, attempts=cfg.rollouts, workers=1,
                        resume=True, limits=limits, sampling=sampling, run_id=task.instance_id, executor=executor)
    run_eval([task], policy.factory(task, level, cfg.seed, first_rollout=done), config)
    results = sorted(RunDir(run_dir).load_results().values(), key=lambda r: r.attempt)
    solved = sum(r.resolved for r in results)
    n = len(results)
    p_hat = solved / n if n else 0.0
    lo, hi = wilson(solved, n)
    outcomes = [{"attempt": r.attempt, "resolved": r.resolved, "exit_reason": r.exit_reason,
                 "infra_failure": r.infra_failure, "steps": r.steps} for r in results]
    return Calibration(candidate=task.instance_id, round=round_, specificity=level, solved=solved, rollouts=n,
                       p_hat=round(p_hat, 4), ci_low=round(lo, 4), ci_high=round(hi, 4),
                       verdict=verdict(p_hat, cfg.band), outcomes=outcomes,
                       seconds=round(time.monotonic() - began, 3))
