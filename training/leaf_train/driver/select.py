"""Stage 5: the best checkpoint, made a self-contained transformers folder export and the next iteration read.

Best = noise-aware: the earliest RL checkpoint whose validation solve rate is within `min_delta` of the
highest (the one-standard-error rule: a later checkpoint must be better by more than the noise of the
measurement to be preferred; the earliest is the least drift from the starting policy). `min_delta` is the
config's when set, else z standard errors of the difference between the two solve rates. The folder gets the weights (LoRA adapters
merged), the tokenizer and `leaf_source.json` naming the base GGUF, so `leaf train export` needs no flags.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_train.driver.policy import StartPolicy
from leaf_train.driver.state import Evaluation


def min_delta(a: Evaluation, b: Evaluation, fixed: float | None = None, z: float = 1.0) -> float:
    """How much b must beat a by to count as better: `fixed`, or z·sqrt(SE_a² + SE_b²)."""
    return fixed if fixed is not None else z * (a.se ** 2 + b.se ** 2) ** 0.5


def best_evaluation(evaluations: list[Evaluation], fixed: float | None = None, z: float = 1.0) -> Evaluation:
    """The RL checkpoint to keep (step > 0): the earliest within min_delta of the highest solve rate."""
    trained = sorted((e for e in evaluations if e.step > 0), key=lambda e: e.step)
    if not trained:
        raise LeafError("no RL checkpoint was evaluated: the RL stage has not run")
    top = max(trained, key=lambda e: (e.solve_rate, -e.step))
    return next(e for e in trained if e.solve_rate >= top.solve_rate - min_delta(e, top, fixed, z))


def materialize(model_dir: Path, policy: StartPolicy, dest: Path, record: dict) -> Path:
    """Write `dest`: weights of `model_dir` (merged when adapters), the tokenizer, leaf_source.json."""
    from transformers import AutoTokenizer

    from leaf_train.driver.evaluate import load_model

    if not model_dir.is_dir():
        raise LeafError(f"checkpoint not found: {model_dir}")
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    if (model_dir / "adapter_config.json").is_file():
        load_model(model_dir, Path(policy.hf_path)).save_pretrained(partial)
    else:
        shutil.copytree(model_dir, partial)
    AutoTokenizer.from_pretrained(policy.hf_path).save_pretrained(partial)
    (partial / "leaf_source.json").write_text(json.dumps({"gguf": policy.base_gguf, **record}, indent=2) + "\n",
                                              encoding="utf-8")
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)
    return dest
