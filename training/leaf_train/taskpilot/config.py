"""The one typed configuration of a TaskPilot run (`leaf train synth` flags or `--config FILE`).

Precedence: defaults, then the config file, then command-line flags. The paper's band, N and R are not
public ([U] in notes/training.md §1): the defaults below are documented choices, not the paper's values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from leaf_cli.executor.config import ExecutorConfig

GeneratorName = Literal["procedural", "llm", "combine"]


class SynthConfig(BaseModel):
    """Everything a synthesis run needs. Every threshold is a field with a documented default."""

    model_config = ConfigDict(extra="forbid")

    sources: list[str] = Field(default_factory=list, description=(
        "Snapshot specs: a local git repository path, a git URL, `pypi:NAME==VERSION`, or `swebench:FILE` "
        "(a SWE-bench / SWE-rebench task file whose repositories become snapshots)."))
    generator: GeneratorName = Field("procedural", description="Which generator proposes candidates.")
    target: int = Field(20, ge=1, description="Stop once this many tasks are accepted.")
    policy: str = Field("scripted:0.1,0.3,0.5,0.7,0.9", description=(
        "The policy to calibrate against (an engine spec, see policy.py). `scripted:...` is a deterministic "
        "oracle that applies the gold patch with a per-specificity probability; it is NOT a model."))
    rollouts: int = Field(4, ge=1, description="N: policy rollouts per candidate; p̂ = solved / N.")
    band: tuple[float, float] = Field((0.2, 0.8), description=(
        "[lo, hi]: p̂ inside is accepted, below is made more precise, above less localizing."))
    rounds: int = Field(2, ge=0, description="R: most refinement rounds per candidate before it is dropped.")
    workers: int = Field(1, ge=1, description="K: candidates processed in parallel.")
    out: Path = Field(Path("taskpilot-out"), description="Run directory; every stage's JSONL lives here.")
    max_candidates: int = Field(200, ge=1, description="Stop generating after this many candidates.")
    seed: int = Field(0, description="Seed for site order, specificity sampling and the scripted policy.")
    start_level: int = Field(2, ge=0, le=4, description="Procedural statements start at this specificity level (0-4).")
    gold_runs: int = Field(3, ge=1, description="Gold must resolve this many runs out of this many.")
    suite_budget_s: float = Field(60.0, gt=0, description="A snapshot whose suite takes longer is skipped; a candidate run over it is dropped.")
    max_f2p: int = Field(50, ge=1, description="Candidates breaking more tests than this are dropped (too broad).")
    tests: list[str] = Field(default_factory=list, description=(
        "Restrict every snapshot's suite to these paths or node ids (for packages with slow suites)."))
    combine_size: int = Field(2, ge=2, description="combine: validated procedural bugs merged into one task.")
    generator_url: str | None = Field(None, description="llm: the OpenAI-compatible endpoint (…/v1).")
    generator_model: str | None = Field(None, description="llm: the model name the endpoint serves.")
    generator_max_turns: int = Field(30, ge=1, description="llm: most turns of one generation episode.")
    agent_max_turns: int = Field(30, ge=1, description="Most turns of one calibration rollout.")
    agent_timeout_s: float = Field(600.0, gt=0, description="Wall-clock limit of one calibration rollout.")
    agent_max_tokens: int | None = Field(None, ge=1, description=(
        "Most tokens the policy generates per turn in a calibration rollout (None: leaf's default, 8,192). Set it "
        "to the RL rollout's budget so p̂ measures the policy as RL will run it."))
    agent_max_context: int | None = Field(None, ge=256, description=(
        "The calibration rollout's context window in tokens: the episode's context limit and, for a llama: "
        "policy, the llama.cpp context it opens (None: the model's training context, at most 65,536)."))
    sandbox: str | None = Field(None, description="Sandbox backend (bwrap, subprocess, docker); None picks bwrap where installed.")
    pip_packages: list[str] = Field(default_factory=list, description="Extra packages every snapshot's environment gets (test dependencies).")
    exclude_tasks: Path | None = Field(None, description=(
        "A task file (earlier iterations' pool): new candidates that duplicate one of its tasks (same files "
        "touched, same F2P) are dropped as `duplicate`."))
    cache_dir: Path | None = Field(None, description="Where sdists and snapshot repositories are cached (default: OUT/cache).")
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig, description=(
        "Where snapshot suite runs, validations and calibration rollouts run: local threads, or Ray tasks "
        "(kind: ray; the run folder must then be on storage every node sees)."))

    @field_validator("band", mode="before")
    @classmethod
    def _parse_band(cls, value: object) -> object:
        if isinstance(value, str):
            parts = [p.strip() for p in value.split(",")]
            if len(parts) != 2:
                raise ValueError(f"band must be LO,HI, got {value!r}")
            return (float(parts[0]), float(parts[1]))
        return value

    @model_validator(mode="after")
    def _check(self) -> "SynthConfig":
        lo, hi = self.band
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"band must satisfy 0 <= lo <= hi <= 1, got {lo},{hi}")
        self.out = self.out.expanduser().resolve()  # subprocesses run in other folders
        if self.cache_dir is not None:
            self.cache_dir = self.cache_dir.expanduser().resolve()
        if self.generator == "llm" and not (self.generator_url and self.generator_model):
            raise ValueError("the llm generator needs --generator-url and --generator-model")
        return self

    @property
    def cache(self) -> Path:
        return self.cache_dir or self.out / "cache"


def load_config(path: Path | None, overrides: dict[str, object]) -> SynthConfig:
    """Defaults, then the YAML/JSON file at `path`, then the non-None `overrides` (command-line flags)."""
    from leaf_train.configfile import read_yaml

    data: dict[str, object] = dict(read_yaml(path)) if path is not None else {}
    data.update({k: v for k, v in overrides.items() if v is not None and v != [] and v != ()})
    return SynthConfig.model_validate(data)
