"""Stage 2: TaskPilot synthesizes and calibrates tasks against the iteration's policy, then the accepted
tasks are split into a training set and a held-out validation set.

TaskPilot's own run folder (ITER/taskpilot) makes this stage resumable; the split is a pure function of
the accepted tasks (ordered by a hash of their id), so rerunning it gives the same two files.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from leaf_cli.errors import LeafError
from leaf_cli.tasks import Task, dump_tasks, load_tasks
from leaf_train.driver.config import IterationConfig
from leaf_train.driver.policy import StartPolicy
from leaf_train.rl.config import RolloutConfig


def synth_config(cfg: IterationConfig, policy_gguf: Path, out: Path, rollout: RolloutConfig) -> Any:
    """The SynthConfig of this iteration: the config's options, with what they leave out filled in: the
    policy (llama.cpp on the iteration's GGUF), the target, and the rollout budget RL and validation give
    the policy (turns, tokens per turn, context window), so calibration measures p̂ under the same budget."""
    from leaf_train.taskpilot.config import SynthConfig

    data = {"policy": f"llama:{policy_gguf}", "target": cfg.train_tasks + cfg.validation.tasks,
            "agent_max_turns": rollout.max_turns, "agent_max_tokens": rollout.max_tokens,
            "agent_max_context": rollout.max_context, **cfg.synth, "out": out}
    try:
        return SynthConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise LeafError(f"synth.{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None


def run_synth(cfg: IterationConfig, policy: StartPolicy, folder: Path, rollout: RolloutConfig) -> dict[str, Any]:
    """Run (or resume) TaskPilot, write its funnel report, split the accepted tasks. Returns the stage output."""
    from leaf_train.taskpilot import pipeline, report

    synth = synth_config(cfg, Path(policy.gguf), folder / "taskpilot", rollout)
    if not synth.sources:
        raise LeafError("synth.sources is empty: name at least one snapshot source (e.g. pypi:toolz==1.0.0)")
    pipeline.run(synth, lambda stage, detail: print(f"taskpilot {stage}: {detail}", file=sys.stderr, flush=True))
    funnel = report.write(synth.out)
    accepted = _accepted(synth.out)
    need = cfg.validation.tasks + 1
    if len(accepted) < need:
        raise LeafError(f"TaskPilot accepted {len(accepted)} tasks, fewer than the {need} the iteration needs "
                        f"({cfg.validation.tasks} held out + at least 1 to train on); see {synth.out / 'report.txt'}")
    validation, train = split(accepted, cfg.validation.tasks)
    train = train[:cfg.train_tasks]
    dump_tasks(train, folder / "tasks" / "train.jsonl")
    dump_tasks(validation, folder / "tasks" / "validation.jsonl")
    return {"taskpilot": str(synth.out), "funnel": funnel["funnel"], "drop_reasons": funnel["drop_reasons"],
            "train": len(train), "validation": len(validation), "policy": synth.policy}


def _accepted(out: Path) -> list[Task]:
    """TaskPilot's accepted tasks with their repositories made absolute (they are read from other folders)."""
    path = out / "tasks.jsonl"
    if not path.is_file():
        return []
    found = load_tasks(path)
    return [t.model_copy(update={"repo": t.repo_location(path.parent)}) for t in found.tasks]


def split(tasks: list[Task], held_out: int) -> tuple[list[Task], list[Task]]:
    """(validation, train): the `held_out` tasks whose id hashes lowest, and the rest, both in hash order."""
    ordered = sorted(tasks, key=lambda t: hashlib.sha256(t.instance_id.encode()).hexdigest())
    return ordered[:held_out], ordered[held_out:]


def load_split(folder: Path, name: str) -> list[Task]:
    return load_tasks(folder / "tasks" / f"{name}.jsonl").tasks
