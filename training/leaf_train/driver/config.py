"""The iteration config: the `iteration:` section of an RL config file (TaskPilot, validation,
consolidation and export settings, and overrides of the RL settings for the iteration's RL stage).

One file serves both commands: `leaf train rl --config FILE` reads the RL settings at its top level (and
ignores this section), `leaf train --iteration N --config FILE` reads this section and trains with the
top-level RL settings merged with `iteration.rl`. Iteration 1 starts from the RL settings' `model`;
iteration N > 1 from iteration N−1's best checkpoint (the driver sets it). Every number is a field with a
documented default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from leaf_train.configfile import read_yaml


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ValidationConfig(_Strict):
    """The held-out set that decides when RL has saturated and which checkpoint is best."""

    tasks: int = Field(2, ge=1, description="Accepted tasks held out of training (chosen by a hash of the id).")
    attempts: int = Field(1, ge=1, description="Attempts per held-out task per evaluation.")
    every: int = Field(2, ge=1, description="M: RL steps between evaluations (also the checkpoint interval).")
    patience: int = Field(2, ge=1, description="P: stop after this many evaluations without improvement.")
    min_delta: float | None = Field(None, ge=0.0, description=(
        "An evaluation improves when it beats the best by more than this; null = from the noise: z times the "
        "standard error of the difference of the two solve rates (leaf_train.driver.select.min_delta)."))
    z: float = Field(1.0, gt=0.0, description="Standard errors an improvement must clear when min_delta is null.")
    benchmark: list[str] = Field(default_factory=list, description=(
        "Snapshot sources of the fixed validation benchmark (TaskPilot specs, other snapshots than the training "
        "ones). Built once with the iteration-1 policy into OUT/validation-benchmark.jsonl and reused unchanged by "
        "every iteration; empty = hold out `tasks` of each iteration's own tasks (changes meaning per iteration)."))
    max_steps: int = Field(20, ge=1, description="Most RL steps in one iteration, saturated or not.")
    max_turns: int | None = Field(None, description="Turns per evaluation episode (default: the RL rollout's).")
    max_tokens: int | None = Field(None, description="Tokens per evaluation turn (default: the RL rollout's).")
    temperature: float | None = Field(None, description="Evaluation temperature (default: the RL rollout's).")
    sandbox: str | None = Field("subprocess", description="Grading sandbox: subprocess, bwrap, docker; null = best.")
    engine: Literal["transformers", "server"] = Field("transformers", description=(
        "transformers: the checkpoint in this process (token logs kept, so consolidation can reuse the "
        "trajectories); server: the RL rollout server (rl.rollout.server), which holds the chunk's last weights."))
    workers: int = Field(1, ge=1, description="Attempts run in parallel (server engine; transformers runs one).")


class ConsolidationConfig(_Strict):
    """Restore tool-use behaviours that faded: RFT on earlier checkpoints' successful trajectories."""

    enabled: bool = Field(False, description="Run consolidation in iterations N > 1.")
    weight: float = Field(0.25, ge=0.0, description=(
        "RFT optimizer steps per RL step, interleaved after every validation chunk (0.25: one RFT step per 4 RL steps)."))
    tolerance: float = Field(0.05, ge=0.0, description="A behaviour is lost when its rate fell more than this below its best.")
    lr: float = Field(1e-6, gt=0.0, description="AdamW learning rate of the RFT steps.")
    micro_batch_size: int = Field(2, ge=1, description="Trajectories per RFT step.")
    max_examples: int = Field(256, ge=1, description="Most trajectories in the restore set.")


class ExportConfig(_Strict):
    """The best checkpoint as a GGUF the CLI runs."""

    quant: str = Field("q4_k_m", description="llama.cpp quantization (leaf_train.export.QUANT_TYPES).")
    base_gguf: str | None = Field(None, description=(
        "The GGUF whose layout the export writes back into; default: the RL model's GGUF (iteration 1) or the "
        "previous best checkpoint's leaf_source.json."))


class IterationConfig(_Strict):
    """One iteration of TaskPilot synthesis -> DPPO -> selection -> export (an RL config's `iteration:`)."""

    rl: dict[str, Any] = Field(default_factory=dict, description=(
        "Overrides deep-merged onto the file's top-level RL settings for the iteration's RL stage (and the "
        "validation and calibration budgets that follow them); `leaf train rl` does not apply them."))
    synth: dict[str, Any] = Field(default_factory=dict, description=(
        "TaskPilot options (SynthConfig fields). `out` is set by the driver; `policy` defaults to llama.cpp on "
        "the iteration's policy GGUF, `target` to validation.tasks + train_tasks, and agent_max_turns / "
        "agent_max_tokens / agent_max_context to the RL rollout's max_turns / max_tokens / max_context."))
    train_tasks: int = Field(4, ge=1, description="Accepted tasks the RL stage trains on.")
    launch: list[str] | None = Field(None, description=(
        "Run each RL chunk as `LAUNCH leaf_train.rl --config CHUNK --tasks TRAIN` in a subprocess, e.g. "
        "[accelerate, launch, --config_file, training/launch/accelerate-fsdp.yaml, -m] for FSDP over a box's GPUs; "
        "null = in-process. "
        "Only RL is distributed: synthesis, validation, selection and export run in the driver's one process."))
    validation: ValidationConfig = Field(default_factory=ValidationConfig, description=(
        "The held-out set: validation every M steps, patience P, the evaluation budget."))
    consolidation: ConsolidationConfig = Field(default_factory=ConsolidationConfig, description=(
        "Restoring faded tool-use behaviours (iterations N > 1)."))
    export: ExportConfig = Field(default_factory=ExportConfig, description="The best checkpoint's GGUF export.")
    source: Path | None = Field(None, exclude=True, description="The file this config was read from.")


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` onto `base`, recursing into mappings both have."""
    out = dict(base)
    for key, value in over.items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def rl_settings(cfg: IterationConfig) -> dict[str, Any]:
    """The iteration's RL settings as a plain mapping: the file's top level with `iteration.rl` merged in."""
    assert cfg.source is not None
    data = read_yaml(cfg.source)
    data.pop("iteration", None)
    return deep_merge(data, cfg.rl)


Stage = Literal["policy", "synth", "baseline", "rl", "select", "export", "report"]
STAGES: tuple[Stage, ...] = ("policy", "synth", "baseline", "rl", "select", "export", "report")
