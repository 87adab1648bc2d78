"""The policy an iteration starts from: iteration N−1's best checkpoint, or the base model for N = 1."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from leaf_cli.errors import LeafError
from leaf_train.driver.config import IterationConfig
from leaf_train.driver.state import read_state
from leaf_train.rl.config import ModelConfig


class StartPolicy(BaseModel):
    """Three views of one policy: what RL trains, what calibration runs, and the GGUF layout export writes."""

    hf_path: str
    gguf: str
    base_gguf: str


def iteration_dir(out: Path, iteration: int) -> Path:
    return out / f"iteration-{iteration}"


def start_policy(cfg: IterationConfig, model: ModelConfig, out: Path, iteration: int) -> StartPolicy:
    """Resolve (and for a GGUF base, dequantize once) the starting policy of `iteration`."""
    if iteration == 1:
        return _base_policy(cfg, model)
    previous = iteration_dir(out, iteration - 1)
    state = read_state(previous)
    if state is None or "select" not in state.done or "export" not in state.done:
        raise LeafError(f"iteration {iteration} starts from iteration {iteration - 1}'s best checkpoint, but {previous} "
                        f"has not finished; run `leaf train --iteration {iteration - 1}` with the same --out first")
    from leaf_train.export import base_gguf_of

    best = Path(state.done["select"]["best"])
    base = base_gguf_of(best)
    if base is None:
        raise LeafError(f"{best} has no leaf_source.json naming its base GGUF")
    return StartPolicy(hf_path=str(best), gguf=state.done["export"]["gguf"], base_gguf=str(base))


def _base_policy(cfg: IterationConfig, model: ModelConfig) -> StartPolicy:
    from leaf_train.rl.model import gguf_path, resolve_checkpoint

    gguf = gguf_path(model) if model.gguf_file else None
    base = Path(cfg.export.base_gguf) if cfg.export.base_gguf else gguf
    if base is None or not base.is_file():
        raise LeafError("the base model has no GGUF: set export.base_gguf to the GGUF matching model.path")
    return StartPolicy(hf_path=str(resolve_checkpoint(model)), gguf=str(gguf or base), base_gguf=str(base))
