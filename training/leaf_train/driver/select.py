"""Stage 5: the best checkpoint, made a self-contained transformers folder export and the next iteration read.

Best = the highest validation solve rate among the RL checkpoints; ties go to the earliest (the least
drift from the starting policy for the same measured skill). The folder gets the weights (LoRA adapters
merged), the tokenizer and `leaf_source.json` naming the base GGUF, so `leaf train export` needs no flags.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_train.driver.policy import StartPolicy
from leaf_train.driver.state import Evaluation


def best_evaluation(evaluations: list[Evaluation]) -> Evaluation:
    """The RL checkpoint to keep (step > 0): highest solve rate, then fewest steps."""
    trained = [e for e in evaluations if e.step > 0]
    if not trained:
        raise LeafError("no RL checkpoint was evaluated: the RL stage has not run")
    return max(trained, key=lambda e: (e.solve_rate, -e.step))


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
