"""`leaf train --iteration N --config FILE --out DIR`: one iteration of the loop, resumably.

Stages, top to bottom, each recorded in DIR/iteration-N/state.json when done and skipped when rerun:
  policy    iteration N−1's best checkpoint (the base model for N = 1), as a transformers folder + GGUF
  synth     TaskPilot synthesizes and calibrates tasks against it; accepted tasks split train/validation
  baseline  the starting policy's validation solve rate (RL step 0)
  rl        DPPO in chunks of M steps, each checkpoint validated, until P evaluations bring no improvement
  select    the best checkpoint, made self-contained (weights, tokenizer, leaf_source.json)
  export    that checkpoint as a GGUF (KL-verified) the CLI runs: `leaf fix --model DIR/iteration-N/export/…`
  report    plots (PNG) and summary.md
A killed run resumes at the stage where it stopped; inside TaskPilot, RL (its checkpoints) and every
evaluation (its eval run folder), at the step where it stopped.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from leaf_cli.errors import LeafError
from leaf_train.driver.config import IterationConfig, rl_settings
from leaf_train.driver.policy import StartPolicy, iteration_dir, start_policy
from leaf_train.driver.state import StateFile
from leaf_train.rl.config import RLConfig, RolloutConfig, load_iteration_config


def iteration_command(iteration: int, config: Path, out: Path) -> int:
    """The CLI entry: run (or resume) iteration `iteration`; 0 when it completed. Bad input raises LeafError."""
    if iteration < 1:
        raise LeafError(f"--iteration must be 1 or more, got {iteration}")
    folder = run_iteration(iteration, load_iteration_config(config), out)
    print(f"iteration {iteration} done: {folder / 'summary.md'}", file=sys.stderr)
    return 0


def rl_config(cfg: IterationConfig, policy: StartPolicy | None = None) -> RLConfig:
    """The iteration's RLConfig; from iteration 2 on, its model is the previous best checkpoint."""
    data = rl_settings(cfg)
    if policy is not None:
        data["model"] = {**data.get("model", {}), "path": policy.hf_path, "gguf_file": None, "gguf_package": None}
    try:
        return RLConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise LeafError(f"{cfg.source}: iteration.rl: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None


def run_iteration(iteration: int, cfg: IterationConfig, out: Path) -> Path:
    """Run every stage not yet done; returns DIR/iteration-N."""
    folder = iteration_dir(out.resolve(), iteration)
    folder.mkdir(parents=True, exist_ok=True)
    text = cfg.model_dump_json(indent=2)
    state = StateFile(folder, iteration, text + rl_config(cfg).model_dump_json())
    (folder / "config.json").write_text(text + "\n", encoding="utf-8")
    if cfg.source is not None:
        shutil.copy2(cfg.source, folder / "config.yaml")  # the whole file: RL settings and this section
    seconds = state.state.seconds

    def stage(name: str, work: Callable[[], dict]) -> dict:
        if not state.is_done(name):
            print(f"== iteration {iteration}: {name}", file=sys.stderr, flush=True)
            began = time.monotonic()
            output = work()
            seconds[name] = round(seconds.get(name, 0.0) + time.monotonic() - began, 1)
            state.finish(name, output)
        return state.output(name)

    policy = StartPolicy.model_validate(stage("policy", lambda: start_policy(
        cfg, rl_config(cfg).model, out.resolve(), iteration).model_dump()))
    rl = rl_config(cfg, policy)
    (folder / "rl-config.json").write_text(rl.model_dump_json(indent=2) + "\n", encoding="utf-8")
    stage("synth", lambda: _synth(cfg, policy, folder, rl.rollout, iteration, out.resolve()))
    stage("baseline", lambda: _baseline(cfg, rl, policy, folder, state))
    stage("rl", lambda: _train(cfg, rl, policy, folder, state, out.resolve(), iteration))
    stage("select", lambda: _select(cfg, policy, folder, state, iteration))
    stage("export", lambda: _export(cfg, folder, state))
    from leaf_train.driver.report import write_report

    write_report(state.state, folder, dict(seconds))
    state.finish("report", {"summary": str(folder / "summary.md")})
    return folder


def _synth(cfg: IterationConfig, policy: StartPolicy, folder: Path, rollout: RolloutConfig, iteration: int,
           out: Path) -> dict:
    from leaf_train.driver.synth import run_synth

    return run_synth(cfg, policy, folder, rollout, iteration, out)


def _baseline(cfg: IterationConfig, rl: RLConfig, policy: StartPolicy, folder: Path, state: StateFile) -> dict:
    from leaf_train.driver.evaluate import evaluate
    from leaf_train.driver.synth import load_split

    hf = Path(policy.hf_path)
    result = evaluate(hf, hf, load_split(folder, "validation"), folder / "eval" / "step_000000", 0, rl, cfg.validation)
    state.state.evaluations = [result]
    return result.model_dump()


def _train(cfg: IterationConfig, rl: RLConfig, policy: StartPolicy, folder: Path, state: StateFile, out: Path,
           iteration: int) -> dict:
    from leaf_train.driver.synth import load_split
    from leaf_train.driver.train import train_until_saturated

    after = None
    if cfg.consolidation.enabled and iteration > 1:
        from leaf_train.driver.restore import restore_hook

        after, report = restore_hook(cfg.consolidation, rl, out, iteration, Path(policy.hf_path), folder)
        state.state.consolidation = report
        state.save()
    return train_until_saturated(rl, cfg.validation, Path(policy.hf_path), load_split(folder, "train"),
                                 load_split(folder, "validation"), folder, state, after, cfg.launch)


def _select(cfg: IterationConfig, policy: StartPolicy, folder: Path, state: StateFile, iteration: int) -> dict:
    from leaf_train.driver.select import best_evaluation, materialize
    from leaf_train.driver.train import checkpoint_dir

    best = best_evaluation(state.state.evaluations, cfg.validation.min_delta, cfg.validation.z)
    dest = materialize(checkpoint_dir(folder / "rl", best.step) / "model", policy, folder / f"leaf-iter{iteration}",
                       {"iteration": iteration, "step": best.step, "solve_rate": best.solve_rate})
    return {"best": str(dest), "step": best.step, "solve_rate": best.solve_rate}


def _export(cfg: IterationConfig, folder: Path, state: StateFile) -> dict:
    from leaf_train.export import base_gguf_of, export

    best = Path(state.output("select")["best"])
    base = base_gguf_of(best)
    if base is None or not base.is_file():
        raise LeafError(f"{best}/leaf_source.json names no readable base GGUF")
    report = export(best, base, folder / "export", cfg.export.quant)
    return report.model_dump()
