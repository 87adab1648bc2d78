"""Config files and the `leaf train rl` entry point's handling of bad input."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from leaf_train.rl.cli import main
from leaf_train.rl.config import RLConfig, load_config

CONFIGS = Path(__file__).resolve().parents[3] / "training" / "configs"


@pytest.mark.parametrize("name", ["cpu-smoke.yaml", "rl-dppo-kl.yaml", "rl-decoupled-ppo.yaml", "rl-gpu-fsdp.yaml"])
def test_shipped_configs_validate(name: str) -> None:
    cfg = load_config(CONFIGS / name)
    assert isinstance(cfg, RLConfig)


def test_every_field_is_documented() -> None:
    def walk(model: type) -> None:
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no description"
            for inner in (field.annotation, *typing.get_args(field.annotation)):
                if isinstance(inner, type) and hasattr(inner, "model_fields"):
                    walk(inner)

    walk(RLConfig)


def test_bad_config_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LeafError, match="config file not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("loss:\n  divergence: js\n")
    with pytest.raises(LeafError, match=r"loss\.divergence"):
        load_config(bad)
    typo = tmp_path / "typo.yaml"
    typo.write_text("rollout:\n  group_sise: 4\n")
    with pytest.raises(LeafError, match="group_sise"):
        load_config(typo)


def test_main_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("leaf: error: config file not found")


def test_missing_gguf_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"out_dir: {tmp_path / 'run'}\nmodel:\n  gguf_file: {tmp_path / 'absent.gguf'}\n")
    assert main(["--config", str(cfg)]) == 2
    assert "GGUF file not found" in capsys.readouterr().err
