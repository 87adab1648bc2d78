"""The iteration config: TaskPilot, DPPO, validation, consolidation and export settings in one YAML file.

The RL part is the RL stage's own config (`leaf train rl --config`), referenced by `rl_config` (a path
relative to this file) and adjusted by `rl` overrides, so one RL file serves both `leaf train rl` and the
iteration. Iteration 1 starts from the RL config's `model`; iteration N > 1 from iteration N−1's best
checkpoint (the driver sets it). Every number is a field with a documented default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from leaf_cli.errors import LeafError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ValidationConfig(_Strict):
    """The held-out set that decides when RL has saturated and which checkpoint is best."""

    tasks: int = Field(2, ge=1, description="Accepted tasks held out of training (chosen by a hash of the id).")
    attempts: int = Field(1, ge=1, description="Attempts per held-out task per evaluation.")
    every: int = Field(2, ge=1, description="M: RL steps between evaluations (also the checkpoint interval).")
    patience: int = Field(2, ge=1, description="P: stop after this many evaluations without improvement.")
    min_delta: float = Field(0.0, ge=0.0, description="An evaluation improves when it beats the best by more than this.")
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
    """One iteration of TaskPilot synthesis -> DPPO -> selection -> export."""

    rl_config: str = Field(description="The RL stage's YAML config, relative to this file.")
    rl: dict[str, Any] = Field(default_factory=dict, description="Overrides deep-merged onto rl_config.")
    synth: dict[str, Any] = Field(default_factory=dict, description=(
        "TaskPilot options (SynthConfig fields). `out` is set by the driver; `policy` defaults to llama.cpp on "
        "the iteration's policy GGUF, and `target` to validation.tasks + train_tasks."))
    train_tasks: int = Field(4, ge=1, description="Accepted tasks the RL stage trains on.")
    launch: list[str] | None = Field(None, description=(
        "Run each RL chunk as `LAUNCH leaf_train.driver.rl_tasks ARGS` in a subprocess, e.g. [accelerate, launch, "
        "--config_file, training/launch/accelerate-fsdp.yaml, -m] for FSDP over a box's GPUs; null = in-process. "
        "Only RL is distributed: synthesis, validation, selection and export run in the driver's one process."))
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    consolidation: ConsolidationConfig = Field(default_factory=ConsolidationConfig)
    export: ExportConfig = Field(default_factory=ExportConfig)
    source: Path | None = Field(None, exclude=True, description="The file this config was read from.")


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` onto `base`, recursing into mappings both have."""
    out = dict(base)
    for key, value in over.items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def load_iteration_config(path: Path) -> IterationConfig:
    """Read an iteration config. An RL-stage config given by mistake gets a clear error naming the fix."""
    data = _yaml(path)
    if "rl_config" not in data and ("rollout" in data or "loss" in data or "steps" in data):
        raise LeafError(f"{path} is an RL-stage config (`leaf train rl --config`); the iteration needs an iteration "
                        "config that references it, e.g. training/configs/cpu-smoke-iteration.yaml")
    try:
        cfg = IterationConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise LeafError(f"{path}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    cfg.source = path.resolve()
    return cfg


def rl_settings(cfg: IterationConfig) -> dict[str, Any]:
    """The RL config as a plain mapping: the referenced file with the overrides merged in."""
    assert cfg.source is not None
    return deep_merge(_yaml(cfg.source.parent / cfg.rl_config), cfg.rl)


def _yaml(path: Path) -> dict[str, Any]:
    import yaml

    if not path.is_file():
        raise LeafError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise LeafError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise LeafError(f"{path}: expected a mapping at the top level")
    return data


Stage = Literal["policy", "synth", "baseline", "rl", "select", "export", "report"]
STAGES: tuple[Stage, ...] = ("policy", "synth", "baseline", "rl", "select", "export", "report")
