"""`leaf train rl --config FILE [--out DIR]`: the command body; the lead wires it into `leaf train`."""

from __future__ import annotations

from pathlib import Path


def rl_command(config: Path, out: Path | None = None) -> Path:
    """Run the RL run described by `config` (YAML); `out` overrides its `out_dir`. Returns the run folder.

    Bad input (missing file, invalid field, missing model) raises LeafError with one clear line.
    """
    from leaf_train.rl.config import load_config
    from leaf_train.rl.run import main

    cfg = load_config(config)
    if out is not None:
        cfg = cfg.model_copy(update={"out_dir": str(out)})
    return main(cfg)
